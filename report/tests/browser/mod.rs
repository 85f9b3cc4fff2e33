//! The HTML report in headless Chromium: where it is, a run of it on a
//! page, and a layout check of a report at a window width, measured by the
//! browser itself. Shared by the report's browser test and the end-to-end
//! one (`#[path]`), which check reports of real runs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The browser: `MPIOVER_CHROMIUM`, else Debian's chromium or Chrome.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MPIOVER_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// The browser, or `None` (the test skipped, saying why) where there is
/// none; under CI (scripts/setup --tests installs it) a missing browser fails.
pub fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let bin = chromium();
    if bin.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: no chromium found under CI: scripts/setup --tests installs it"
        );
        eprintln!(
            "SKIPPED {test}: no chromium found (apt-get install -y chromium, or set MPIOVER_CHROMIUM)"
        );
    }
    bin
}

/// Runs the browser headless on `url` with `args`; its stdout and stderr.
pub fn browser(bin: &Path, args: &[&str], url: &str) -> (String, String) {
    let profile = std::env::temp_dir().join(format!(
        "mpiover-chromium-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("runs chromium");
    let _ = std::fs::remove_dir_all(&profile);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The console lines of a browser's log (errors of the page's script).
pub fn console(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect()
}

/// What the page's layout looked like to the browser at one width.
#[derive(Debug)]
pub struct Layout {
    /// The window's inner width the page saw.
    pub viewport: u32,
    /// One line per fault: what is wider than the window, what covers
    /// what, a link to nowhere.
    pub problems: Vec<String>,
    /// How many of each kind of element were measured (`histograms 10`).
    pub checked: Vec<(String, u32)>,
}

impl Layout {
    pub fn checked(&self, what: &str) -> u32 {
        self.checked
            .iter()
            .find(|(k, _)| k == what)
            .map_or(0, |(_, n)| *n)
    }
}

/// Measures the report `html` in a window `width` px wide: a copy of it
/// with `LAYOUT_JS` appended runs in the browser, which writes its findings
/// into the DOM it dumps.
pub fn layout(bin: &Path, html: &Path, width: u32) -> Layout {
    let page = std::fs::read_to_string(html).expect("the report");
    let probe = html.with_extension(format!("w{width}.html"));
    let at = page.rfind("</body>").expect("</body> in the report");
    let mut text = page[..at].to_string();
    text.push_str(&format!("<script>{LAYOUT_JS}</script>"));
    text.push_str(&page[at..]);
    std::fs::write(&probe, text).unwrap();
    let url = format!("file://{}", probe.display());
    let (dom, log) = browser(
        bin,
        &[&format!("--window-size={width},1000"), "--dump-dom"],
        &url,
    );
    let msgs = console(&log);
    assert!(msgs.is_empty(), "console messages at {width} px: {msgs:#?}");
    let start = dom
        .find("<pre id=\"layout-check\">")
        .unwrap_or_else(|| panic!("the layout probe did not run at {width} px\n{log}"));
    let body = &dom[start + "<pre id=\"layout-check\">".len()..];
    let body = &body[..body.find("</pre>").expect("end of the probe's output")];
    let mut l = Layout {
        viewport: 0,
        problems: vec![],
        checked: vec![],
    };
    for line in body.lines() {
        let line = line
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        if let Some(p) = line.strip_prefix("problem ") {
            l.problems.push(p.to_string());
        } else if let Some(v) = line.strip_prefix("viewport ") {
            l.viewport = v.trim().parse().unwrap_or(0);
        } else if let Some(c) = line.strip_prefix("checked ") {
            if let Some((k, n)) = c.rsplit_once(' ') {
                l.checked.push((k.to_string(), n.parse().unwrap_or(0)));
            }
        }
    }
    l
}

/// A screenshot of the top `height` px of the page at `width`.
pub fn screenshot(bin: &Path, html: &Path, width: u32, height: u32, png: &Path) {
    let url = format!("file://{}", html.display());
    let (_, log) = browser(
        bin,
        &[
            "--hide-scrollbars",
            &format!("--window-size={width},{height}"),
            &format!("--screenshot={}", png.display()),
        ],
        &url,
    );
    let msgs = console(&log);
    assert!(msgs.is_empty(), "console messages: {msgs:#?}");
    let bytes = std::fs::read(png)
        .unwrap_or_else(|e| panic!("no screenshot {}: {e}\n{log}", png.display()));
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "a real screenshot: {}",
        png.display()
    );
}

/// Checks a report at both widths a reader's window has (a laptop's and a
/// desktop's): nothing scrolls sideways, the histograms' marks are clear of
/// each other, the navigation reaches every section. Screenshots of each
/// width go to `dir` (`NAME-1400.png`). Returns the layouts for more checks.
pub fn assert_fits(bin: &Path, html: &Path, dir: &Path, name: &str) -> Vec<Layout> {
    let mut out = vec![];
    for width in [1400, 1920] {
        let l = layout(bin, html, width);
        assert_eq!(l.viewport, width, "{name}: the window's width\n{l:#?}");
        assert!(
            l.problems.is_empty(),
            "{name} at {width} px: {} problem(s):\n{}",
            l.problems.len(),
            l.problems.join("\n")
        );
        for what in ["sites-table", "nav links", "sections"] {
            assert!(l.checked(what) > 0, "{name}: no {what} measured\n{l:#?}");
        }
        let png = dir.join(format!("{name}-{width}.png"));
        screenshot(bin, html, width, 2400, &png);
        eprintln!("{name}: {width} px fits; screenshot {}", png.display());
        out.push(l);
    }
    out
}

/// Runs in the page after its own script: measures and writes one line per
/// finding into `<pre id="layout-check">`.
const LAYOUT_JS: &str = r#"
(function(){
  var out=[],W=window.innerWidth;
  function p(s){out.push('problem '+s);}
  function n(k,v){out.push('checked '+k+' '+v);}
  function box(e){return e.getBoundingClientRect();}
  function meets(a,b){return a.width>0&&b.width>0&&a.left<b.right-0.5&&b.left<a.right-0.5&&a.top<b.bottom-0.5&&b.top<a.bottom-0.5;}
  function name(e){return e.id||(e.parentElement&&e.parentElement.id)||e.className||e.tagName;}
  out.push('viewport '+W);
  var de=document.documentElement;
  if(de.scrollWidth>W){p('the page is '+de.scrollWidth+' px wide in a '+W+' px window');}
  // Nothing that scrolls sideways on its own, nothing past the window's edge.
  var sc=document.querySelectorAll('.scroll,pre.src');
  sc.forEach(function(e){
    if(e.scrollWidth>e.clientWidth+1){p(name(e.firstElementChild||e)+' scrolls sideways: '+e.scrollWidth+' px in '+e.clientWidth);}
  });
  n('scrolling boxes',sc.length);
  var all=document.querySelectorAll('main table, main svg, main pre, main h2, main p, main dl');
  all.forEach(function(e){var b=box(e);if(b.right>W+0.5){p(name(e)+' ends at '+Math.round(b.right)+' px, past the window');}});
  var t=document.getElementById('sites-table');
  if(t){var b=box(t);n('sites-table',1);if(b.right>W){p('sites table ends at '+b.right);}
    t.querySelectorAll('th').forEach(function(th){if(box(th).width<20){p('sites table column "'+th.textContent+'" is '+box(th).width+' px');}});}
  // Each histogram: the tmax label inside the chart and clear of every
  // other mark; at least two labelled ticks.
  var hs=document.querySelectorAll('svg.dist');
  hs.forEach(function(s){
    var sb=box(s),lab=s.querySelector('.tmax-label');
    if(!lab){p(s.id+': no tmax label');return;}
    var lb=box(lab);
    if(lb.left<sb.left-0.5||lb.right>sb.right+0.5||lb.top<sb.top-0.5||lb.bottom>sb.bottom+0.5){p(s.id+': the tmax label "'+lab.textContent+'" is cut at the chart\'s edge');}
    s.querySelectorAll('.bar,.axis,.tick,.label,.tick-mark').forEach(function(m){
      if(meets(lb,box(m))){p(s.id+': the tmax label "'+lab.textContent+'" covers a '+m.getAttribute('class')+(m.textContent?' "'+m.textContent+'"':''));}
    });
    var ticks=s.querySelectorAll('text.tick');
    if(ticks.length<2){p(s.id+': '+ticks.length+' labelled tick(s) on the time axis');}
    for(var i=1;i<ticks.length;i++){if(meets(box(ticks[i-1]),box(ticks[i]))){p(s.id+': tick labels '+ticks[i-1].textContent+' and '+ticks[i].textContent+' touch');}}
    s.querySelectorAll('.tick').forEach(function(k){if(box(k).left<sb.left-0.5||box(k).right>sb.right+0.5){p(s.id+': tick label '+k.textContent+' cut at the edge');}});
  });
  n('histograms',hs.length);
  // The navigation: every link lands on a section, every section is linked.
  var nav=document.querySelector('nav.toc'),linked={};
  if(!nav){p('no navigation');}else{
    var st=getComputedStyle(nav).position;
    if(st!=='sticky'&&st!=='fixed'){p('the navigation scrolls away ('+st+')');}
    nav.querySelectorAll('a').forEach(function(a){var id=a.getAttribute('href').slice(1);linked[id]=1;if(!document.getElementById(id)){p('navigation link #'+id+' leads nowhere');}});
    n('nav links',nav.querySelectorAll('a').length);
    if(box(nav).right>W+0.5){p('the navigation is wider than the window');}
  }
  var secs=document.querySelectorAll('main h2[id], main section[id]');
  secs.forEach(function(h){if(!linked[h.id]){p('section #'+h.id+' is not in the navigation');}});
  n('sections',secs.length);
  var pre=document.createElement('pre');pre.id='layout-check';pre.textContent=out.join('\n');
  document.body.appendChild(pre);
})();
"#;
