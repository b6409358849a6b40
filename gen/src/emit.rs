//! Text emitters: expand `ops::OPS` over `table::TYPES` into C declarations, C11 `_Generic`
//! macros, C++ overloads, Rust shims, the symbol list and the C test type lists.

use crate::ops::{Op, ADDITIONS, DEVICE_FIXED, FIXED, HOST_OPS, HOST_OPS_WHY, OPS, PRINT_C, PRINT_CXX};
use crate::table::{self, CType};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;
use std::process::ExitCode;

/// One concrete function expanded from an op family.
pub(crate) struct Inst<'a> {
    pub(crate) op: &'a Op,
    pub(crate) name: String,
    /// The element type, `None` for the SIZE and mem forms (`void *`).
    pub(crate) ty: Option<&'static CType>,
    pub(crate) elem: usize,
}

pub(crate) fn instances(op: &Op) -> Vec<Inst<'_>> {
    let mut v = Vec::new();
    if let Some(pat) = op.typed {
        for t in table::of_class(op.class) {
            v.push(Inst { op, name: pat.replace("{T}", t.name), ty: Some(t), elem: t.size });
        }
    }
    if let Some(pat) = op.sized {
        for &s in table::SIZES {
            v.push(Inst { op, name: pat.replace("{S}", &s.to_string()), ty: None, elem: s / 8 });
        }
    }
    if let Some(name) = op.mem {
        v.push(Inst { op, name: name.to_string(), ty: None, elem: 1 });
    }
    v
}

/// Whether an op family has `_on_queue` forms: the RMA copies (not p/g), put-with-signal, the
/// wait_until families.
pub(crate) fn has_on_queue(op: &Op) -> bool {
    has_work_group(op) && !(op.section == "p2p_sync" && op.typed.is_some_and(|t| t.contains("_test")))
}

/// The wait_until_any/some forms return their result through a device pointer on the queue.
fn queue_ret(op: &Op) -> bool {
    op.typed.is_some_and(|t| t.contains("wait_until_any") || t.contains("wait_until_some"))
}

pub(crate) fn queue_name(name: &str) -> String {
    let base = name.strip_prefix("ishmemx_").or_else(|| name.strip_prefix("ishmem_")).unwrap_or(name);
    format!("ishmemx_{base}_on_queue")
}

pub(crate) fn queue_params(op: &Op) -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<(&str, &str)> = op.params.to_vec();
    if is_coll(op) {
        v.push(("int *", "ret"));
    } else if queue_ret(op) {
        v.push(("size_t *", "ret"));
    }
    v.push(("ishmemx_queue_t", "q"));
    v
}

/// The Rust body of a collective's `_on_queue` shim (api::queue_coll).
fn coll_queue_body(op: &Op) -> String {
    let fam = op.typed.or(op.mem).expect("a collective has a name");
    let mv = |m: &str, root: &str| {
        format!("queue_coll::data({{F}}, queue_coll::Move::{m}, team, dest.cast(), source.cast(), nelems, {{E}}, {root}, ret, q)")
    };
    if fam.contains("alltoall") {
        mv("Alltoall", "0")
    } else if fam.contains("broadcast") {
        mv("Broadcast", "root")
    } else if fam.contains("fcollect") {
        mv("Fcollect", "0")
    } else if fam.contains("collect") {
        mv("Collect", "0")
    } else {
        let (opname, mode) = if fam.ends_with("_sum_inscan") {
            ("sum", 1)
        } else if fam.ends_with("_sum_exscan") {
            ("sum", 2)
        } else {
            let base = fam.rsplit_once("_reduce").expect("a reduction").0;
            (base.rsplit('_').next().expect("an operator"), 0)
        };
        format!("queue_coll::reduce::<{{R}}>({{F}}, \"{opname}\", team, dest, source, nreduce, {mode}, ret, q)")
    }
}

/// The Rust body of an `_on_queue` shim: the same core call, in `api::queue`, with the queue.
pub(crate) fn queue_body(op: &Op) -> String {
    if is_coll(op) {
        return coll_queue_body(op);
    }
    // An on-queue call completes in stream order: its nbi form is the blocking one.
    let b = op.body.replacen("rma::put_nbi(", "rma::put(", 1).replacen("rma::get_nbi(", "rma::get(", 1);
    let b = b.replacen("rma::", "queue::", 1).replacen("signal::", "queue::", 1).replacen("sync::", "queue::", 1);
    let b = b.replace("sync::Values", "queue::Values");
    let close = b.rfind(')').expect("a call");
    let extra = if queue_ret(op) { ", ret, q" } else { ", q" };
    format!("{}{extra})", &b[..close])
}

fn c_type(tmpl: &str, ty: Option<&CType>) -> String {
    let t = ty.map_or("void", |t| t.c);
    let s = tmpl.replace('T', t);
    // "void" appears only behind a pointer: the SIZE/mem forms have no by-value T.
    s
}

fn c_decl(i: &Inst) -> String {
    c_decl_of(&i.name, i.op.ret, i.op.params, i.ty)
}

pub(crate) fn c_decl_of(name: &str, ret: &str, params: &[(&str, &str)], ty: Option<&CType>) -> String {
    let ret = if ret == "T" { c_type("T", ty) } else { ret.to_string() };
    let params: Vec<String> = params
        .iter()
        .map(|(t, n)| {
            let ct = c_type(t, ty);
            if ct.ends_with('*') {
                format!("{ct}{n}")
            } else {
                format!("{ct} {n}")
            }
        })
        .collect();
    format!("{ret} {name}({})", params.join(", "))
}

fn rust_type(tmpl: &str, ty: Option<&CType>) -> String {
    let r = ty.map_or("std::ffi::c_void", |t| t.rust);
    match tmpl {
        "T *" => format!("*mut {r}"),
        "const T *" => format!("*const {r}"),
        "T" => r.to_string(),
        "size_t" => "usize".into(),
        "ptrdiff_t" => "isize".into(),
        "int" => "c_int".into(),
        "uint64_t *" => "*mut u64".into(),
        "uint64_t" => "u64".into(),
        "const int *" => "*const c_int".into(),
        "int *" => "*mut c_int".into(),
        "size_t *" => "*mut usize".into(),
        "ishmemx_queue_t" => "crate::api::queue::Queue".into(),
        "ishmem_team_t" => "c_int".into(),
        "shmem_team_t" => "team::Handle".into(),
        "shmem_team_t *" => "*mut team::Handle".into(),
        "shmemx_queue_t" => "crate::api::queue::Queue".into(),
        "shmem_ctx_t" => "ctx::Ctx".into(),
        other => panic!("no Rust spelling for C type template {other:?}"),
    }
}

fn rust_shim(i: &Inst) -> String {
    rust_shim_of(&i.name, i.op.ret, i.op.params, i.ty, i.op.body, i.elem)
}

pub(crate) fn rust_shim_of(name: &str, ret: &str, params: &[(&str, &str)], ty: Option<&CType>, body: &str, elem: usize) -> String {
    let params: Vec<String> = params.iter().map(|(t, n)| format!("{n}: {}", rust_type(t, ty))).collect();
    let ret = match ret {
        "void" => String::new(),
        "T" => format!(" -> {}", rust_type("T", ty)),
        "int" => " -> c_int".into(),
        "size_t" => " -> usize".into(),
        other => panic!("no Rust spelling for return type {other:?}"),
    };
    let r = ty.map_or("u8", |t| t.rust);
    let body = body.replace("{F}", "F").replace("{R}", r).replace("{E}", &elem.to_string());
    format!(
        "#[no_mangle]\npub unsafe extern \"C\" fn {name}({params}){ret} {{\n    const F: &str = \"{name}\";\n    \
         // SAFETY: the C caller passes pointers as the API defines them; the core checks them.\n    \
         guard(F, || unsafe {{ {body} }})\n}}\n",
        params = params.join(", "),
    )
}

/// The `_on_queue` instances of an op: (name, parameters, Rust body), one per typed/SIZE/mem name.
fn queue_instances(op: &Op) -> Vec<(Inst<'_>, String)> {
    if !has_on_queue(op) && !is_coll(op) {
        return Vec::new();
    }
    instances(op).into_iter().map(|i| (Inst { name: queue_name(&i.name), ..i }, queue_body(op))).collect()
}

/// Every exported name with its header, section and C declaration.
pub(crate) fn all_decls() -> Vec<(&'static str, &'static str, String, String)> {
    let mut v: Vec<(&str, &str, String, String)> = FIXED.iter().map(|(h, s, n, d)| (*h, *s, n.to_string(), d.to_string())).collect();
    for op in OPS.iter().chain(HOST_OPS) {
        for i in instances(op) {
            v.push((op.header, op.section, i.name.clone(), c_decl(&i)));
        }
    }
    for op in OPS {
        let params = queue_params(op);
        for (i, _) in queue_instances(op) {
            v.push(("ishmemx.h", "on_queue", i.name.clone(), c_decl_of(&i.name, "void", &params, i.ty)));
        }
    }
    v
}

/// One generic name: its parameters, the typed pattern it dispatches to, and its return type.
struct Generic<'a> {
    op: &'a Op,
    name: String,
    pattern: String,
    params: Vec<(&'static str, &'static str)>,
    ret: &'static str,
    /// `__host__ __device__` under CUDA (host-only names, like the queue forms, are not).
    hd: bool,
}

/// The generic names a header declares: the plain ones and their `_on_queue` forms.
fn generics(header: &str) -> Vec<Generic<'static>> {
    let mut v = Vec::new();
    for op in OPS.iter().filter(|o| !is_coll(o)) {
        let (Some(g), Some(pat)) = (op.generic, op.typed) else { continue };
        if op.header == header {
            v.push(Generic { op, name: g.to_string(), pattern: pat.to_string(), params: op.params.to_vec(), ret: op.ret, hd: true });
        }
        if header == "ishmemx.h" && has_on_queue(op) {
            v.push(Generic { op, name: queue_name(g), pattern: queue_name(pat), params: queue_params(op), ret: "void", hd: false });
        }
    }
    v
}

fn generic_c(g: &Generic) -> String {
    let args: Vec<&str> = g.params.iter().map(|(_, n)| *n).collect();
    let first = args[0];
    let mut s = format!("#define {}({}) _Generic(*({first}), \\\n", g.name, args.join(", "));
    let types: Vec<&CType> = table::of_class(g.op.class).filter(|t| t.classes & table::GENERIC != 0).collect();
    for (k, t) in types.iter().enumerate() {
        let sep = if k + 1 == types.len() { "" } else { "," };
        let _ = writeln!(s, "    {}: {}{sep} \\", t.c, g.pattern.replace("{T}", t.name));
    }
    let _ = writeln!(s, "    )({})", args.join(", "));
    s
}

fn generic_cxx(g: &Generic) -> String {
    let mut s = String::new();
    let hd = if g.hd { "ISHMEMI_HD " } else { "" };
    for t in table::of_class(g.op.class).filter(|t| t.classes & table::GENERIC != 0) {
        let args: Vec<&str> = g.params.iter().map(|(_, n)| *n).collect();
        let _ = writeln!(
            s,
            "{hd}inline {} {{ return {}({}); }}",
            c_decl_of(&g.name, g.ret, &g.params, Some(t)),
            g.pattern.replace("{T}", t.name),
            args.join(", ")
        );
    }
    s
}

fn header(name: &str, pre: &str) -> String {
    let mut s = String::from(pre);
    s.push_str("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    let mut last = "";
    for (h, sec, _, decl) in all_decls() {
        if h != name {
            continue;
        }
        if sec != last {
            let _ = writeln!(s, "\n/* ---- {sec} ---- */");
            last = sec;
        }
        let _ = writeln!(s, "{decl};");
    }
    s.push_str("\n#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n");
    let dev = if name == "ishmem.h" { "ishmem/cuda_device.cuh" } else { "ishmem/cudax_device.cuh" };
    let _ = write!(
        s,
        "/* ---- CUDA: the device API (host+device names callable from kernels) ---- */\n\
         #if defined(__CUDACC__) && defined(__cplusplus)\n#include <{dev}>\n#endif\n\n"
    );
    s.push_str("/* ---- generic names: C11 _Generic, C++ overloads ---- */\n#ifdef __cplusplus\n");
    s.push_str(
        "#ifndef ISHMEMI_HD\n#if defined(__CUDACC__)\n#define ISHMEMI_HD __host__ __device__\n#else\n#define ISHMEMI_HD\n#endif\n#endif\n",
    );
    for g in generics(name) {
        s.push_str(&generic_cxx(&g));
    }
    s.push_str(&coll_cxx(name));
    if name == "ishmemx.h" {
        s.push_str(PRINT_CXX);
    }
    s.push_str("#else /* C11 */\n");
    for g in generics(name) {
        s.push_str(&generic_c(&g));
    }
    s.push_str(&coll_c(name));
    if name == "ishmemx.h" {
        s.push_str(PRINT_C);
    }
    let guard = if name == "ishmem.h" { "ISHMEM_H" } else { "ISHMEMX_H" };
    let _ = write!(s, "#endif /* __cplusplus */\n\n#endif /* {guard} */\n");
    s
}

/// Parameter names of a parameter list.
fn names(params: &[(&str, &str)]) -> String {
    params.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
}

/// The collective families a header declares, with whether it declares their `_on_queue`
/// forms: ishmem.h holds the plain forms, ishmemx.h the `_on_queue` forms.
fn coll_forms(hdr: &str) -> Vec<(&'static Op, bool)> {
    OPS.iter().filter(|o| is_coll(o)).filter(|o| o.header == hdr || hdr == "ishmemx.h").map(|o| (o, hdr == "ishmemx.h")).collect()
}

/// C++: the team-less overload of every typed and mem collective (the world team), and the
/// generic names with and without a team; `__host__ __device__` under CUDA for the plain forms.
fn coll_cxx(hdr: &str) -> String {
    let mut s = String::new();
    for (op, queue) in coll_forms(hdr) {
        let params = if queue { queue_params(op) } else { op.params.to_vec() };
        let rest = &params[1..];
        let (hd, ret, ret_kw) = if queue { ("", "void", "") } else { ("ISHMEMI_HD ", op.ret, "return ") };
        let qn = |n: &str| if queue { queue_name(n) } else { n.to_string() };
        s.push_str(&format!("/* {}: team-less forms (ISHMEM_TEAM_WORLD) */\n", qn(op.typed.or(op.mem).unwrap_or_default())));
        for i in instances(op) {
            let name = qn(&i.name);
            let _ =
                writeln!(s, "{hd}inline {} {{ {ret_kw}{name}(ISHMEM_TEAM_WORLD, {}); }}", c_decl_of(&name, ret, rest, i.ty), names(rest));
        }
        let (Some(g), Some(pat)) = (op.generic, op.typed) else { continue };
        let g = qn(g);
        for t in table::of_class(op.class).filter(|t| t.classes & table::GENERIC != 0) {
            let f = qn(&pat.replace("{T}", t.name));
            let _ = writeln!(s, "{hd}inline {} {{ {ret_kw}{f}({}); }}", c_decl_of(&g, ret, &params, Some(t)), names(&params));
            let _ = writeln!(s, "{hd}inline {} {{ {ret_kw}{f}(ISHMEM_TEAM_WORLD, {}); }}", c_decl_of(&g, ret, rest, Some(t)), names(rest));
        }
    }
    s
}

/// C11: every typed and mem collective name becomes a macro that counts its arguments and adds
/// ISHMEM_TEAM_WORLD when the team was left out; the generic names select the typed function by
/// `_Generic` on the destination and do the same.
fn coll_c(hdr: &str) -> String {
    let forms = coll_forms(hdr);
    if forms.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "/* Collectives: NAME(team, args...) or NAME(args...) (the world team). */\n\
         #ifndef ISHMEMI_NARG\n\
         #define ISHMEMI_CAT_(a, b) a##b\n#define ISHMEMI_CAT(a, b) ISHMEMI_CAT_(a, b)\n\
         #define ISHMEMI_NARG(...) ISHMEMI_NARG_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)\n\
         #define ISHMEMI_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, N, ...) N\n#endif\n",
    );
    let arity = |op: &Op, queue: bool| if queue { queue_params(op).len() - 1 } else { op.params.len() - 1 };
    let mut arities: Vec<usize> = forms.iter().map(|(o, q)| arity(o, *q)).collect();
    arities.sort_unstable();
    arities.dedup();
    for k in arities {
        let a: Vec<String> = (1..=k).map(|i| format!("a{i}")).collect();
        let a = a.join(", ");
        let _ = writeln!(s, "#ifndef ISHMEMI_T{k}_{k}");
        let _ = writeln!(s, "#define ISHMEMI_T{k}_{k}(f, {a}) f(ISHMEM_TEAM_WORLD, {a})");
        let _ = writeln!(s, "#define ISHMEMI_T{k}_{}(f, t, {a}) f(t, {a})", k + 1);
        let _ = writeln!(s, "#define ISHMEMI_GT{k}_{k}(g, {a}) g(a1)(ISHMEM_TEAM_WORLD, {a})");
        let _ = writeln!(s, "#define ISHMEMI_GT{k}_{}(g, t, {a}) g(a1)(t, {a})", k + 1);
        let _ = writeln!(s, "#endif");
    }
    for (op, queue) in forms {
        let k = arity(op, queue);
        let qn = |n: &str| if queue { queue_name(n) } else { n.to_string() };
        for i in instances(op) {
            let _ =
                writeln!(s, "#define {n}(...) ISHMEMI_CAT(ISHMEMI_T{k}_, ISHMEMI_NARG(__VA_ARGS__))({n}, __VA_ARGS__)", n = qn(&i.name));
        }
        let (Some(g), Some(pat)) = (op.generic, op.typed) else { continue };
        let g = qn(g);
        let _ = writeln!(s, "#define ISHMEMI_G_{g}(d) _Generic(*(d), \\");
        let types: Vec<&CType> = table::of_class(op.class).filter(|t| t.classes & table::GENERIC != 0).collect();
        for (j, t) in types.iter().enumerate() {
            let sep = if j + 1 == types.len() { "" } else { "," };
            let _ = writeln!(s, "    {}: {}{sep} \\", t.c, qn(&pat.replace("{T}", t.name)));
        }
        s.push_str("    )\n");
        let _ = writeln!(s, "#define {g}(...) ISHMEMI_CAT(ISHMEMI_GT{k}_, ISHMEMI_NARG(__VA_ARGS__))(ISHMEMI_G_{g}, __VA_ARGS__)");
    }
    s
}

fn rust_shims() -> String {
    let mut s = String::from(
        "//! Generated by ishmem-gen from src/table.rs and gen/src/ops.rs: the typed, SIZE and mem\n\
         //! shims of the sections rma, amo, signal, p2p_sync and collectives. Do not edit.\n\
         //! Their safety contract is the C API's: pointers as the specification defines them.\n\n\
         #![allow(clippy::missing_safety_doc)]\n\n\
         use crate::api::{amo, coll, queue, queue_coll, rma, signal, sync};\nuse crate::ffi::guard;\nuse std::ffi::c_int;\n\n",
    );
    for op in OPS.iter().chain(HOST_OPS) {
        for i in instances(op) {
            s.push_str(&rust_shim(&i));
        }
    }
    for op in OPS {
        let params = queue_params(op);
        for (i, body) in queue_instances(op) {
            s.push_str(&rust_shim_of(&i.name, "void", &params, i.ty, &body, i.elem));
        }
    }
    s
}

fn symbols() -> String {
    let set: BTreeSet<String> = all_decls().into_iter().map(|(_, _, n, _)| n).collect();
    set.into_iter().map(|n| n + "\n").collect()
}

/// `abi/additions.txt`: name, a tab and why, for every exported name beyond the Intel SHMEM
/// API (`ops::ADDITIONS`, each of which must be one of our symbols).
fn additions() -> String {
    let ours: BTreeSet<String> = all_decls().into_iter().map(|(_, _, n, _)| n).collect();
    let mut s = String::from("# Exported names of libishmem beyond the Intel SHMEM API (generated by ishmem-gen from gen/src/ops.rs):\n");
    for (n, why) in all_additions() {
        assert!(ours.contains(&n), "ADDITIONS names {n}, which is not exported");
        let _ = writeln!(s, "{n}\t{why}");
    }
    s
}

/// `ops::ADDITIONS` and every name of the `HOST_OPS` families, with why each exists.
fn all_additions() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = ADDITIONS.iter().map(|(n, w)| (n.to_string(), w.to_string())).collect();
    for op in HOST_OPS {
        for i in instances(op) {
            let fam = if i.ty.is_some() { op.typed } else { op.mem }.expect("a named family");
            let why = HOST_OPS_WHY.iter().find(|(f, _)| *f == fam).expect("HOST_OPS_WHY has every family").1;
            v.push((i.name, why.to_string()));
        }
    }
    v
}

fn test_types() -> String {
    let mut s = String::from(
        "/* Generated by ishmem-gen from src/table.rs: X-macro lists of the types of each family,\n \
         * for the C tests. X(TYPENAME, C type). Do not edit. */\n#ifndef ISHMEM_TEST_GEN_TYPES_H\n#define ISHMEM_TEST_GEN_TYPES_H\n",
    );
    let lists = [
        ("ISHT_RMA_TYPES", table::RMA),
        ("ISHT_AMO_STD_TYPES", table::AMO_STD),
        ("ISHT_AMO_STD_NBI_TYPES", table::AMO_STD_NBI),
        ("ISHT_AMO_EXT_TYPES", table::AMO_EXT),
        ("ISHT_AMO_EXT_NBI_TYPES", table::AMO_EXT_NBI),
        ("ISHT_AMO_BIT_TYPES", table::AMO_BIT),
        ("ISHT_AMO_BIT_NBI_TYPES", table::AMO_BIT_NBI),
        ("ISHT_P2P_TYPES", table::P2P),
        ("ISHT_GENERIC_TYPES", table::GENERIC),
        ("ISHT_COLL_TYPES", table::COLL),
        ("ISHT_REDUCE_BIT_TYPES", table::REDUCE_BIT),
    ];
    for (name, class) in lists {
        let _ = write!(s, "#define {name}(X)");
        for t in table::of_class(class) {
            let _ = write!(s, " \\\n    X({}, {})", t.name, t.c);
        }
        s.push('\n');
    }
    s.push_str("#define ISHT_REDUCE_BIT_GENERIC_TYPES(X)");
    for t in table::of_class(table::REDUCE_BIT).filter(|t| t.classes & table::GENERIC != 0) {
        let _ = write!(s, " \\\n    X({}, {})", t.name, t.c);
    }
    s.push('\n');
    s.push_str("#define ISHT_SIZES(X)");
    for sz in table::SIZES {
        let _ = write!(s, " X({sz})");
    }
    s.push_str("\n#endif\n");
    s
}

fn dev_body(i: &Inst) -> String {
    let t = i.ty.map_or("void", |t| t.c);
    i.op.dev.replace("{T}", t).replace("{E}", &i.elem.to_string())
}

fn args_of(op: &Op) -> String {
    op.params.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
}

/// `__host__ __device__` wrapper: the device body on the GPU, the library symbol on the host;
/// then the public name is made to mean the wrapper.
fn hd_wrapper(name: &str, ret: &str, params: &str, args: &str, body: &str) -> String {
    let f = if body.contains("F)") || body.contains("F,") { format!("const char *F = \"{name}\";\n    ") } else { String::new() };
    format!(
        "__host__ __device__ __forceinline__ {ret} ishmemi_hd_{name}({params}) {{\n\
         #ifdef __CUDA_ARCH__\n    {f}{body};\n\
         #else\n    return {name}({args});\n#endif\n}}\n#define {name} ishmemi_hd_{name}\n"
    )
}

fn params_of(i: &Inst) -> String {
    let d = c_decl(i);
    let open = d.find('(').expect("a declaration has parameters");
    d[open + 1..d.len() - 1].to_string()
}

fn ret_of(i: &Inst) -> String {
    if i.op.ret == "T" {
        c_type("T", i.ty)
    } else {
        i.op.ret.to_string()
    }
}

/// The work-group body: the group shares the copy, or every thread runs the test and the
/// group synchronizes. The nbi forms of contiguous put and get (`nbi`) leave the group
/// unsynchronized on return for direct (mapped) targets: their data is complete only at the
/// next quiet, which synchronizes the group.
fn wg_body(dev: &str, nbi: bool) -> String {
    if dev.contains("ishmemi::solo{}") {
        return dev.replace("ishmemi::solo{}", "group"); /* the collective synchronizes the group */
    }
    let (wput, wget) = if nbi {
        ("ishmemi::wg_put_nbi(group, ", "ishmemi::wg_get_nbi(group, ")
    } else {
        ("ishmemi::wg_put(group, ", "ishmemi::wg_get(group, ")
    };
    for (from, to) in [
        ("ishmemi::put(", wput),
        ("ishmemi::get(", wget),
        ("ishmemi::strided(", "ishmemi::wg_strided(group, "),
        ("ishmemi::put_signal(", "ishmemi::wg_put_signal(group, "),
    ] {
        if dev.starts_with(from) {
            return dev.replacen(from, to, 1);
        }
    }
    match dev.strip_prefix("return ") {
        Some(expr) => format!("auto r = {expr}; group.sync(); return r"),
        None => format!("{dev}; group.sync()"),
    }
}

fn wg_name(name: &str) -> String {
    let base = name.strip_prefix("ishmemx_").or_else(|| name.strip_prefix("ishmem_")).unwrap_or(name);
    format!("ishmemx_{base}_work_group")
}

fn has_work_group(op: &Op) -> bool {
    !(op.section == "amo" || is_coll(op) || op.dev.contains("ishmemi::p<") || op.dev.contains("ishmemi::g<"))
}

/// A collective family: team first, host only for now (no device, work_group or on_queue
/// forms), with team-less spellings in the headers.
pub(crate) fn is_coll(op: &Op) -> bool {
    op.section == "collectives"
}

fn cuda_device_header(hdr: &str) -> String {
    let guard = if hdr == "ishmem.h" { "ISHMEM_CUDA_DEVICE_CUH" } else { "ISHMEMX_CUDA_DEVICE_CUH" };
    let mut s = format!(
        "/* Generated by ishmem-gen from src/table.rs and gen/src/ops.rs: the CUDA device API of {hdr}.\n \
         * Each host+device name becomes a __host__ __device__ inline wrapper: in device code it runs\n \
         * the inline implementation of ishmem/cuda_impl.cuh, in host code it calls libishmem's\n \
         * symbol. Do not edit. */\n#ifndef {guard}\n#define {guard}\n\n#include <ishmem/cuda_impl.cuh>\n"
    );
    if hdr == "ishmemx.h" {
        s.push_str("#include <cooperative_groups.h>\n");
    }
    s.push('\n');
    for (h, name, ret, params, args, body) in DEVICE_FIXED {
        if *h == hdr {
            s.push_str(&hd_wrapper(name, ret, params, args, body));
        }
    }
    for op in OPS.iter().filter(|o| o.header == hdr) {
        for i in instances(op) {
            s.push_str(&hd_wrapper(&i.name, &ret_of(&i), &params_of(&i), &args_of(op), &dev_body(&i)));
        }
    }
    if hdr == "ishmem.h" {
        s.push_str(
            "/* Teams and collectives are callable in kernels (ishmem/cuda_coll.cuh). */\n#define ISHMEM_HAVE_DEVICE_COLLECTIVES 1\n",
        );
    }
    if hdr == "ishmemx.h" {
        s.push_str(
            "\n/* ---- work-group forms: every thread of the cooperative group calls with the same\n \
                    * arguments; the group shares the work and synchronizes before returning. ---- */\n",
        );
        for op in OPS.iter().filter(|o| has_work_group(o)) {
            for i in instances(op) {
                let _ = writeln!(
                    s,
                    "template <class Group> __device__ __forceinline__ {} {}({}, const Group &group) {{\n    \
                     const char *F = \"{}\";\n    {};\n}}",
                    ret_of(&i),
                    wg_name(&i.name),
                    params_of(&i),
                    wg_name(&i.name),
                    wg_body(&dev_body(&i), i.name.contains("_nbi"))
                );
            }
            if let Some(g) = op.generic {
                let params = template_params(op.params);
                let ret = if op.ret == "T" { "TYPE".to_string() } else { op.ret.to_string() };
                let body = op.dev.replace("{T}", "TYPE").replace("{E}", "sizeof(TYPE)");
                let _ = writeln!(
                    s,
                    "template <class TYPE, class Group> __device__ __forceinline__ {ret} {}({params}, const Group &group) {{\n    \
                     const char *F = \"{}\";\n    {};\n}}",
                    wg_name(g),
                    wg_name(g),
                    wg_body(&body, g.contains("_nbi"))
                );
            }
        }
        s.push_str(&coll_work_group());
        s.push_str(
            "template <class Group> __device__ __forceinline__ uint64_t ishmemx_signal_wait_until_work_group(uint64_t *sig_addr, int cmp, uint64_t cmp_value, const Group &group) {\n    \
             uint64_t v = ishmem_signal_wait_until(sig_addr, cmp, cmp_value);\n    group.sync();\n    return v;\n}\n\
             template <class Group> __device__ __forceinline__ void ishmemx_fence_work_group(const Group &group) {\n    \
             ishmemi::wg_quiet(group);\n}\n\
             template <class Group> __device__ __forceinline__ void ishmemx_quiet_work_group(const Group &group) {\n    \
             ishmemi::wg_quiet(group);\n}\n",
        );
    }
    let _ = write!(s, "\n#endif /* {guard} */\n");
    s
}

/// The parameter list of a generic device template: the element type is the parameter `TYPE`.
fn template_params(params: &[(&str, &str)]) -> String {
    params
        .iter()
        .map(|(ty, n)| {
            let ct = ty.replace('T', "TYPE");
            if ct.ends_with('*') {
                format!("{ct}{n}")
            } else {
                format!("{ct} {n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The C parameter list of `params` for element type `ty`.
fn param_list(params: &[(&str, &str)], ty: Option<&CType>) -> String {
    let d = c_decl_of("f", "void", params, ty);
    let open = d.find('(').expect("a declaration has parameters");
    d[open + 1..d.len() - 1].to_string()
}

/// The work-group forms of the collectives: every thread of the group calls with the same
/// arguments and shares the copies and the arithmetic (ishmem/cuda_coll.cuh); with and without
/// the team, typed, mem and generic; and the group forms of team_sync, barrier_all, sync_all.
fn coll_work_group() -> String {
    let mut s = String::from("\n/* ---- collectives: work-group forms ---- */\n");
    for op in OPS.iter().filter(|o| is_coll(o)) {
        let rest = &op.params[1..];
        for i in instances(op) {
            let n = wg_name(&i.name);
            let _ = writeln!(
                s,
                "template <class Group> __device__ __forceinline__ {ret} {n}({}, const Group &group) {{\n    \
                 const char *F = \"{n}\";\n    {};\n}}\n\
                 template <class Group> __device__ __forceinline__ {ret} {n}({}, const Group &group) {{\n    \
                 return {n}(ISHMEM_TEAM_WORLD, {}, group);\n}}",
                params_of(&i),
                wg_body(&dev_body(&i), false),
                param_list(rest, i.ty),
                names(rest),
                ret = ret_of(&i),
            );
        }
        if let Some(g) = op.generic {
            let n = wg_name(g);
            let body = op.dev.replace("{T}", "TYPE").replace("{E}", "sizeof(TYPE)");
            let _ = writeln!(
                s,
                "template <class TYPE, class Group> __device__ __forceinline__ int {n}({}, const Group &group) {{\n    \
                 const char *F = \"{n}\";\n    {};\n}}\n\
                 template <class TYPE, class Group> __device__ __forceinline__ int {n}({}, const Group &group) {{\n    \
                 return {n}(ISHMEM_TEAM_WORLD, {}, group);\n}}",
                template_params(op.params),
                wg_body(&body, false),
                template_params(rest),
                names(rest),
            );
        }
    }
    s.push_str(
        "template <class Group> __device__ __forceinline__ int ishmemx_team_sync_work_group(ishmem_team_t team, const Group &group) {\n    \
         return ishmemi::team_sync(group, team, \"ishmemx_team_sync_work_group\");\n}\n\
         template <class Group> __device__ __forceinline__ void ishmemx_barrier_all_work_group(const Group &group) {\n    \
         __threadfence_system();\n    group.sync();\n    if (group.thread_rank() == 0) ishmemi::barrier_all(\"ishmemx_barrier_all_work_group\");\n    group.sync();\n}\n\
         template <class Group> __device__ __forceinline__ void ishmemx_sync_all_work_group(const Group &group) {\n    \
         __threadfence_system();\n    group.sync();\n    if (group.thread_rank() == 0) ishmemi::barrier_all(\"ishmemx_sync_all_work_group\");\n    group.sync();\n}\n",
    );
    s
}

/// (path relative to the repository, contents) of every generated file.
pub fn all_files() -> Vec<(&'static str, String)> {
    let osh = crate::oshmem::rows();
    vec![
        ("include/ishmem.h", header("ishmem.h", include_str!("../templates/ishmem_pre.h"))),
        ("include/ishmemx.h", header("ishmemx.h", include_str!("../templates/ishmemx_pre.h"))),
        ("include/ishmem/cuda_device.cuh", cuda_device_header("ishmem.h")),
        ("include/ishmem/cudax_device.cuh", cuda_device_header("ishmemx.h")),
        ("src/api/generated.rs", rust_shims()),
        ("abi/symbols.txt", symbols()),
        ("abi/additions.txt", additions()),
        ("tests/c/gen_types.h", test_types()),
        ("docs/ENV.md", crate::env::markdown()),
        ("include/shmem.h", crate::oshmem::shmem_h(&osh)),
        ("include/shmemx.h", crate::oshmem::shmemx_h(&osh)),
        ("abi/shmem-symbols.txt", crate::oshmem::symbols(&osh)),
        ("abi/shmem-missing.txt", crate::oshmem::missing(&osh)),
        ("src/api/generated_ctx.rs", crate::oshmem::rust_shims(&osh)),
    ]
}

/// Names of the manifest's plain forms in the sections this release covers that we leave
/// out on purpose, with the reason (printed by `--manifest`).
const LEFT_OUT: &[(&str, &str)] =
    &[("ishmemx_debug_test", "an internal debugging hook of the reference implementation with no documented behaviour")];

/// Checks that every `plain` name of the covered sections of the reference manifest is one of
/// our symbols (or deliberately left out).
pub fn check_manifest(path: &Path) -> ExitCode {
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("ishmem-gen: cannot read {}", path.display());
        return ExitCode::from(2);
    };
    let ours: BTreeSet<String> = all_decls().into_iter().map(|(_, _, n, _)| n).collect();
    let sections = ["setup", "memory", "rma", "amo", "signal", "p2p_sync", "ordering", "teams", "collectives"];
    let mut missing = Vec::new();
    let mut seen = BTreeSet::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 7 || f[5] != "plain" || !sections.contains(&f[1]) {
            continue;
        }
        if !seen.insert(f[2].to_string()) {
            continue;
        }
        if !ours.contains(f[2]) && !LEFT_OUT.iter().any(|(n, _)| *n == f[2]) {
            missing.push(f[2].to_string());
        }
    }
    for (n, why) in LEFT_OUT {
        println!("left out on purpose: {n}: {why}");
    }
    let mut bad_extra = false;
    let additions = all_additions();
    let all_theirs: BTreeSet<&str> = text.lines().skip(1).filter_map(|l| l.split('\t').nth(2)).collect();
    for n in &ours {
        let documented = additions.iter().any(|(a, _)| a == n);
        if !all_theirs.contains(n.as_str()) && !documented {
            eprintln!("manifest: {n} is exported but neither in the manifest nor in ops::ADDITIONS");
            bad_extra = true;
        }
        if all_theirs.contains(n.as_str()) && documented {
            eprintln!("manifest: {n} is in ops::ADDITIONS but the manifest has it");
            bad_extra = true;
        }
    }
    if missing.is_empty() && !bad_extra {
        println!("manifest: all {} plain names of {} are declared", seen.len(), sections.join(", "));
        println!("manifest: {} names beyond it, all in ops::ADDITIONS (abi/additions.txt)", additions.len());
        ExitCode::SUCCESS
    } else {
        for m in &missing {
            eprintln!("manifest: missing {m}");
        }
        ExitCode::from(1)
    }
}
