//! The page's inline CSS and JavaScript (nothing is fetched from the network).

pub(crate) const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
h3{font-size:1em;margin:1.4em 0 .4em}
.meta{color:#57606a;font-size:.9em}.meta code{font-size:1em}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;min-width:170px}
.card .v{font-size:1.5em;font-weight:600}.card .l{color:#57606a;font-size:.85em}
.card.bad .v{color:#a50f15}
ol.worst li{margin:.3em 0}
table{border-collapse:collapse;font-size:.85em;margin:8px 0}
th,td{padding:3px 8px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
th{background:#f6f8fa;position:sticky;top:0;cursor:pointer;user-select:none}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.sig td.ovh{color:#a50f15;font-weight:600}
.tag{display:inline-block;padding:0 6px;border-radius:10px;font-size:.85em;background:#eaeef2}
.tag.sig{background:#ffebe9;color:#a50f15}.tag.few{background:#fff8c5}
.scroll{overflow-x:auto}
svg text{font-family:inherit}
pre.src{background:#f6f8fa;padding:8px;border-radius:6px;font-size:.85em;overflow-x:auto}
pre.src .hl{background:#ffebe9;display:block;font-weight:600}
pre.src .gap{display:block;color:#57606a}
ul.causes{margin:.2em 0;padding-left:1.4em;font-size:.9em}ul.causes li{margin:.2em 0}
.region{border-top:1px solid #eaeef2;padding-top:6px}
.site{border-top:1px solid #eaeef2;padding-top:6px}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px;align-items:start}
@media(max-width:900px){.grid2{grid-template-columns:1fr}}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:6px 10px;margin:4px 0}
dl.methods{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;font-size:.9em}
dl.methods dt{color:#57606a}
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
