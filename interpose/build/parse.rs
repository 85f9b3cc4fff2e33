//! Reading the MPI functions out of the bindgen output of `mpiover-mpisys`.

use std::collections::BTreeMap;

use quote::ToTokens;

pub(crate) struct Func {
    pub(crate) args: Vec<(String, String)>,
    pub(crate) ret: Option<String>,
    pub(crate) variadic: bool,
}

pub(crate) fn ty(t: &syn::Type) -> String {
    t.to_token_stream().to_string()
}

pub(crate) fn norm(t: &str) -> String {
    t.chars().filter(|c| !c.is_whitespace()).collect()
}

pub(crate) fn parse(path: &str) -> BTreeMap<String, Func> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("cannot parse {path}: {e}"));
    let mut out = BTreeMap::new();
    for item in file.items {
        let syn::Item::ForeignMod(m) = item else {
            continue;
        };
        for fi in m.items {
            let syn::ForeignItem::Fn(f) = fi else {
                continue;
            };
            let mut args = Vec::new();
            for a in &f.sig.inputs {
                if let syn::FnArg::Typed(pt) = a {
                    let name = pt.pat.to_token_stream().to_string();
                    args.push((name, ty(&pt.ty)));
                }
            }
            let ret = match &f.sig.output {
                syn::ReturnType::Default => None,
                syn::ReturnType::Type(_, t) => Some(ty(t)),
            };
            out.insert(
                f.sig.ident.to_string(),
                Func {
                    args,
                    ret,
                    variadic: f.sig.variadic.is_some(),
                },
            );
        }
    }
    out
}
