//! The C entry points: an event wrapper or a plain (counted) one per
//! function.

use super::*;

/// `name` is the wrapped function; `e` its event spec, which for an MPI-4
/// large-count variant (`MPI_Send_c`) is its base function's (`MPI_Send`):
/// the event is then recorded as the base function and only the call count
/// goes to `name`.
pub(crate) fn gen_event(name: &str, f: &Func, e: &Event) -> String {
    let call: Vec<&str> = f.args.iter().map(|(a, _)| a.as_str()).collect();
    let call = call.join(", ");
    let pname = format!("P{name}");
    let Parts {
        pre, post, after, ..
    } = event_parts(name, f, e);
    let args: Vec<String> = f.args.iter().map(|(a, t)| format!("{a}: {t}")).collect();
    let ret = f
        .ret
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    format!(
        "#[no_mangle]\npub unsafe extern \"C\" fn {name}({args}){ret} {{\n\
         let Some(mut __g) = crate::rt::enter() else {{ return {pname}({call}); }};\n\
         {pre}\
         let __t0 = crate::timer::now();\n\
         let __r = {pname}({call});\n\
         let __t1 = crate::timer::now();\n\
         let __ra: usize = crate::caller!();\n\
         let mut __ev = crate::rt::Ev::new(crate::names::FID_{base});\n\
         {call_fid}\
         if __r == 0 {{\n{post}}}\n\
         __g.event(__ra, &__ev, __t1.wrapping_sub(__t0));\n\
         {after}\
         __r\n}}\n",
        args = args.join(", "),
        base = e.name,
        // Only a large-count variant counts its calls apart from its event.
        call_fid = if e.name == name {
            String::new()
        } else {
            format!("__ev.call_fid = crate::names::FID_{name};\n")
        }
    )
}

/// The event spec of an MPI-4 large-count variant (`MPI_Recv_c`, MPICH 4):
/// its base function's, when the header has both. The parameter names are
/// the same; counts are `MPI_Count` and displacements `MPI_Aint`, which the
/// roles accept.
pub(crate) fn large_count_base<'a>(
    name: &str,
    events: &BTreeMap<&str, &'a Event>,
) -> Option<&'a Event> {
    events.get(name.strip_suffix("_c")?).copied()
}

pub(crate) fn gen_plain(name: &str, f: &Func) -> String {
    let call: Vec<&str> = f.args.iter().map(|(a, _)| a.as_str()).collect();
    let call = call.join(", ");
    let pname = format!("P{name}");
    let mut before = String::new();
    let mut after_call = String::new();
    if spec::FREES_COMM.contains(&name) {
        after_call.push_str("crate::rt::comm_freed();");
    }
    if spec::FREES_TYPE.contains(&name) {
        after_call.push_str("crate::rt::type_freed();");
    }
    if name == "MPI_Request_free" {
        let q = &f.args.first().expect("MPI_Request_free has an argument").0;
        before.push_str(&format!(
            "if !{q}.is_null() {{ __g.forget((*{q}).bits()); }}"
        ));
    }
    if name == "MPI_Cancel" {
        let q = &f.args.first().expect("MPI_Cancel has an argument").0;
        before.push_str(&format!(
            "if !{q}.is_null() {{ __g.cancelling((*{q}).bits()); }}"
        ));
    }
    let args: Vec<String> = f.args.iter().map(|(a, t)| format!("{a}: {t}")).collect();
    let ret = f
        .ret
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    format!(
        "#[no_mangle]\npub unsafe extern \"C\" fn {name}({args}){ret} {{\n\
         let Some(mut __g) = crate::rt::enter() else {{ let __r = {pname}({call}); {after_call} return __r; }};\n\
         {before}\
         let __t0 = crate::timer::now();\n\
         let __r = {pname}({call});\n\
         let __t1 = crate::timer::now();\n\
         {after_call}\
         __g.plain(crate::names::FID_{name}, __t1.wrapping_sub(__t0));\n\
         __r\n}}\n",
        args = args.join(", ")
    )
}

// ---------------------------------------------------------------------------
// Fortran (Open MPI: mpif.h / `use mpi` and `use mpi_f08`)
// ---------------------------------------------------------------------------
