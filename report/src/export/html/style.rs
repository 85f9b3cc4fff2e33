//! The page's inline CSS and JavaScript (nothing is fetched from the network).

pub(crate) const CSS: &str = r#"
:root{--nav:34px}
html{scroll-padding-top:calc(var(--nav) + 8px)}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1880px;margin:0 auto;padding:0 24px 48px}
nav.toc{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid #d0d7de;height:var(--nav);display:flex;gap:4px 14px;align-items:center;flex-wrap:wrap;overflow:hidden;font-size:.9em;margin:0 -24px;padding:0 24px}
nav.toc a{color:#0969da;text-decoration:none;white-space:nowrap}nav.toc a:hover{text-decoration:underline}
nav.toc .t{font-weight:600;color:#57606a}
h1{font-size:1.5em;margin:.6em 0 .2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
h3{font-size:1em;margin:1.4em 0 .4em;overflow-wrap:anywhere}
.meta{color:#57606a;font-size:.9em;overflow-wrap:anywhere}.meta code{font-size:1em}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;min-width:170px}
.card .v{font-size:1.5em;font-weight:600}.card .l{color:#57606a;font-size:.85em}
.card.bad .v{color:#a50f15}
ol.worst li{margin:.3em 0}
table{border-collapse:collapse;font-size:.85em;margin:8px 0}
th,td{padding:3px 6px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:var(--nav);cursor:pointer;user-select:none}
.scroll th{top:0}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.sig td.ovh{color:#a50f15;font-weight:600}
table.fit{width:100%}
table.fit th{white-space:normal;vertical-align:bottom}
table.fit td.w{white-space:normal;overflow-wrap:anywhere;min-width:4em}
table.fit td.w code{font-size:1em}
table.fit td .v{white-space:nowrap}
.tag{display:inline-block;padding:0 6px;border-radius:10px;font-size:.85em;background:#eaeef2;white-space:nowrap}
.tag.sig{background:#ffebe9;color:#a50f15}.tag.few{background:#fff8c5}
.scroll{overflow-x:auto}
svg{max-width:100%;height:auto}
svg text{font-family:inherit}
pre.src{background:#f6f8fa;padding:8px;border-radius:6px;font-size:.85em;white-space:pre-wrap;overflow-wrap:anywhere}
pre.src .hl{background:#ffebe9;display:block;font-weight:600}
pre.src .gap{display:block;color:#57606a}
ul.causes{margin:.2em 0;padding-left:1.4em;font-size:.9em}ul.causes li{margin:.2em 0}
.region{border-top:1px solid #eaeef2;padding-top:6px}
.site{border-top:1px solid #eaeef2;padding-top:6px}
.grid2{display:grid;grid-template-columns:minmax(0,540px) minmax(0,1fr);gap:16px;align-items:start}
@media(max-width:900px){.grid2{grid-template-columns:minmax(0,1fr)}}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:6px 10px;margin:4px 0;overflow-wrap:anywhere}
dl.methods{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:4px 16px;font-size:.9em}
dl.methods dt{color:#57606a}dl.methods dd{margin:0;overflow-wrap:anywhere}
dl.methods dd.warn{margin:0}
"#;

/// Sorts a table by the clicked column (numbers by data-v when present).
pub(crate) const JS: &str = r#"
(function(){
  document.querySelectorAll('table.sortable').forEach(function(t){
    var ths=t.querySelectorAll('thead th');
    ths.forEach(function(th,i){
      th.addEventListener('click',function(){
        var tb=t.tBodies[0];var rows=Array.prototype.slice.call(tb.rows);
        var asc=th.getAttribute('data-asc')!=='1';
        ths.forEach(function(x){x.removeAttribute('data-asc');});
        if(asc){th.setAttribute('data-asc','1');}
        rows.sort(function(a,b){
          var x=a.cells[i],y=b.cells[i];
          var vx=x.getAttribute('data-v'),vy=y.getAttribute('data-v');
          var c;
          if(vx!==null&&vy!==null){c=parseFloat(vx)-parseFloat(vy);}else{c=x.textContent.localeCompare(y.textContent);}
          return asc?c:-c;
        });
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
  document.documentElement.setAttribute('data-ready','1');
})();
"#;
