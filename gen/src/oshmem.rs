//! The OpenSHMEM side of the generated files: `include/shmem.h`, `include/shmemx.h`,
//! `abi/shmem-symbols.txt` and `abi/shmem-missing.txt`, from the same tables as `ishmem.h`
//! (`table::TYPES`, OpenSHMEM's type lists `table::osh`, `ops::OPS`, `ops::FIXED`).
//!
//! Every exported `shmem_*` (and `shmemx_*`) name is an alias of an `ishmem_*` symbol: build.rs
//! has the linker give it the target's address, from the `exported` rows of
//! `abi/shmem-symbols.txt`. A name is exported only where its OpenSHMEM declaration is
//! ABI-identical to its target's ishmem one (`check_alias` compares return and parameter types,
//! less `const` and the handle typedefs, and the generator stops on any difference). Names that
//! ishmem has nothing for are listed missing, with the reason.

use crate::emit::{all_decls, c_decl_of, has_on_queue, instances, is_coll, queue_body, queue_name, queue_params, rust_shim_of};
use crate::ops::{Op, FIXED, HOST_OPS, OPS};
use crate::table::{self, osh, CType};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One name of the OpenSHMEM API (or one `shmemx_*` extension).
pub struct Row {
    pub name: String,
    /// "1.5", "1.6", "1.5-deprecated" (the OpenSHMEM version that has it) or "shmemx".
    pub spec: &'static str,
    /// The heading it is declared under.
    pub section: &'static str,
    pub what: What,
}

pub enum What {
    /// An alias of the ishmem symbol `target`, declared as `decl`.
    Exported { target: String, decl: String },
    /// A function of libishmem's own with no ishmem counterpart (contexts, realloc, ...),
    /// declared as `decl`; `rust` is its generated Rust shim (None: hand-written in src/api).
    Native { decl: String, rust: Option<String> },
    /// Not exported, and why.
    /// (none today: every name of the lists is exported or native; kept for the list format)
    #[allow(dead_code)]
    Missing(&'static str),
}

/// Section headings, in header order.
const SECTIONS: &[&str] = &[
    "setup",
    "teams",
    "memory",
    "rma",
    "amo",
    "signal",
    "p2p_sync",
    "ordering",
    "collectives",
    "locks",
    "profiling",
    "deprecated",
    "on_queue",
    "gpu",
];

/// Hand-written OpenSHMEM names with an ishmem target: (spec, section, name, OpenSHMEM
/// declaration, ishmem target).
const FIXED_OSH: &[(&str, &str, &str, &str, &str)] = &[
    ("1.5", "setup", "shmem_init", "void shmem_init(void)", "ishmem_init"),
    ("1.5", "setup", "shmem_finalize", "void shmem_finalize(void)", "ishmem_finalize"),
    ("1.5", "setup", "shmem_init_thread", "int shmem_init_thread(int requested, int *provided)", "ishmem_init_thread"),
    ("1.5", "setup", "shmem_query_thread", "void shmem_query_thread(int *provided)", "ishmem_query_thread"),
    ("1.6", "setup", "shmem_query_initialized", "void shmem_query_initialized(int *initialized)", "ishmemx_query_initialized"),
    ("1.5", "setup", "shmem_my_pe", "int shmem_my_pe(void)", "ishmem_my_pe"),
    ("1.5", "setup", "shmem_n_pes", "int shmem_n_pes(void)", "ishmem_n_pes"),
    ("1.5", "setup", "shmem_pe_accessible", "int shmem_pe_accessible(int pe)", "ishmem_pe_accessible"),
    ("1.5", "setup", "shmem_addr_accessible", "int shmem_addr_accessible(const void *addr, int pe)", "ishmem_addr_accessible"),
    ("1.5", "setup", "shmem_ptr", "void *shmem_ptr(const void *dest, int pe)", "ishmem_ptr"),
    ("1.5", "setup", "shmem_info_get_version", "void shmem_info_get_version(int *major, int *minor)", "ishmem_info_get_version"),
    ("1.5", "setup", "shmem_info_get_name", "void shmem_info_get_name(char *name)", "ishmem_info_get_name"),
    ("1.5", "setup", "shmem_global_exit", "void shmem_global_exit(int status)", "ishmem_global_exit"),
    ("1.5", "teams", "shmem_team_my_pe", "int shmem_team_my_pe(shmem_team_t team)", "ishmem_team_my_pe"),
    ("1.5", "teams", "shmem_team_n_pes", "int shmem_team_n_pes(shmem_team_t team)", "ishmem_team_n_pes"),
    ("1.5", "teams", "shmem_team_get_config",
     "int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config)", "ishmem_team_get_config"),
    ("1.5", "teams", "shmem_team_translate_pe",
     "int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team)", "ishmem_team_translate_pe"),
    ("1.5", "teams", "shmem_team_split_strided",
     "int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team)",
     "ishmem_team_split_strided"),
    ("1.5", "teams", "shmem_team_split_2d",
     "int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team)",
     "ishmem_team_split_2d"),
    ("1.5", "teams", "shmem_team_destroy", "void shmem_team_destroy(shmem_team_t team)", "ishmem_team_destroy"),
    ("1.5", "memory", "shmem_malloc", "void *shmem_malloc(size_t size)", "ishmem_malloc"),
    ("1.5", "memory", "shmem_calloc", "void *shmem_calloc(size_t count, size_t size)", "ishmem_calloc"),
    ("1.5", "memory", "shmem_align", "void *shmem_align(size_t alignment, size_t size)", "ishmem_align"),
    ("1.5", "memory", "shmem_free", "void shmem_free(void *ptr)", "ishmem_free"),
    ("1.5", "signal", "shmem_signal_fetch", "uint64_t shmem_signal_fetch(const uint64_t *sig_addr)", "ishmem_signal_fetch"),
    ("1.6", "signal", "shmem_signal_add", "void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe)", "ishmemx_signal_add"),
    ("1.6", "signal", "shmem_signal_set", "void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe)", "ishmemx_signal_set"),
    ("1.5", "p2p_sync", "shmem_signal_wait_until",
     "uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value)", "ishmem_signal_wait_until"),
    ("1.5", "ordering", "shmem_fence", "void shmem_fence(void)", "ishmem_fence"),
    ("1.5", "ordering", "shmem_quiet", "void shmem_quiet(void)", "ishmem_quiet"),
    ("1.5", "collectives", "shmem_barrier_all", "void shmem_barrier_all(void)", "ishmem_barrier_all"),
    ("1.5", "collectives", "shmem_sync_all", "void shmem_sync_all(void)", "ishmem_sync_all"),
    ("1.5", "collectives", "shmem_team_sync", "int shmem_team_sync(shmem_team_t team)", "ishmem_team_sync"),
    // OpenSHMEM's C11 spelling of team_sync; the deprecated active-set shmem_sync(PE_start,
    // logPE_stride, PE_size, pSync) shares the symbol name and is not provided.
    ("1.5", "collectives", "shmem_sync", "int shmem_sync(shmem_team_t team)", "ishmem_sync"),
    ("1.6", "setup", "shmem_team_ptr", "void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe)", "ishmem_team_ptr"),
    ("1.6", "ordering", "shmem_pe_quiet", "void shmem_pe_quiet(const int *target_pes, size_t npes)", "ishmem_pe_quiet"),
    ("1.5", "locks", "shmem_set_lock", "void shmem_set_lock(long *lock)", "ishmem_set_lock"),
    ("1.5", "locks", "shmem_test_lock", "int shmem_test_lock(long *lock)", "ishmem_test_lock"),
    ("1.5", "locks", "shmem_clear_lock", "void shmem_clear_lock(long *lock)", "ishmem_clear_lock"),
    ("1.5", "profiling", "shmem_pcontrol", "void shmem_pcontrol(const int level, ...)", "ishmem_pcontrol"),
    ("1.5-deprecated", "deprecated", "_my_pe", "int _my_pe(void)", "ishmem_my_pe"),
    ("1.5-deprecated", "deprecated", "_num_pes", "int _num_pes(void)", "ishmem_n_pes"),
    ("1.5-deprecated", "deprecated", "shmalloc", "void *shmalloc(size_t size)", "ishmem_malloc"),
    ("1.5-deprecated", "deprecated", "shfree", "void shfree(void *ptr)", "ishmem_free"),
    ("1.5-deprecated", "deprecated", "shmemalign", "void *shmemalign(size_t alignment, size_t size)", "ishmem_align"),
];

/// OpenSHMEM names libishmem implements itself (no ishmem counterpart: Intel SHMEM has no
/// contexts, realloc or allocation hints), hand-written in src/api (ctx.rs, memory.rs):
/// (spec, section, name, declaration).
const NATIVE_OSH: &[(&str, &str, &str, &str)] = &[
    ("1.5", "setup", "shmem_ctx_create", "int shmem_ctx_create(long options, shmem_ctx_t *ctx)"),
    ("1.5", "setup", "shmem_ctx_destroy", "void shmem_ctx_destroy(shmem_ctx_t ctx)"),
    ("1.5", "teams", "shmem_team_create_ctx", "int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx)"),
    ("1.5", "teams", "shmem_ctx_get_team", "int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team)"),
    ("1.5", "memory", "shmem_realloc", "void *shmem_realloc(void *ptr, size_t size)"),
    ("1.5", "memory", "shmem_malloc_with_hints", "void *shmem_malloc_with_hints(size_t size, long hints)"),
    ("1.6", "signal", "shmem_ctx_signal_add", "void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe)"),
    ("1.6", "signal", "shmem_ctx_signal_set", "void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe)"),
    ("1.5", "ordering", "shmem_ctx_fence", "void shmem_ctx_fence(shmem_ctx_t ctx)"),
    ("1.5", "ordering", "shmem_ctx_quiet", "void shmem_ctx_quiet(shmem_ctx_t ctx)"),
    ("1.6", "ordering", "shmem_ctx_pe_quiet", "void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes)"),
];

/// The deprecated OpenSHMEM names libishmem implements itself (src/api/deprecated.rs: no ishmem
/// counterpart): (name, declaration). The active-set reductions are added by `rows`.
const DEPRECATED_OSH: &[(&str, &str)] = &[
    ("start_pes", "void start_pes(int npes)"),
    ("shrealloc", "void *shrealloc(void *ptr, size_t size)"),
    ("shmem_clear_cache_inv", "void shmem_clear_cache_inv(void)"),
    ("shmem_set_cache_inv", "void shmem_set_cache_inv(void)"),
    ("shmem_clear_cache_line_inv", "void shmem_clear_cache_line_inv(void *dest)"),
    ("shmem_set_cache_line_inv", "void shmem_set_cache_line_inv(void *dest)"),
    ("shmem_udcflush", "void shmem_udcflush(void)"),
    ("shmem_udcflush_line", "void shmem_udcflush_line(void *dest)"),
    ("shmem_wait", "void shmem_wait(long *ivar, long cmp_value)"),
    ("shmem_barrier", "void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_broadcast32", "void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_broadcast64", "void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_collect32", "void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_collect64", "void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_fcollect32", "void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_fcollect64", "void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_alltoall32", "void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_alltoall64", "void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_alltoalls32", "void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
    ("shmem_alltoalls64", "void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync)"),
];

/// The deprecated (OpenSHMEM 1.4) AMO names and the family each is an older spelling of,
/// with whether it takes the float/double types too.
const AMO_OLD: &[(&str, &str, bool)] = &[
    ("fetch", "ishmem_{T}_atomic_fetch", true),
    ("set", "ishmem_{T}_atomic_set", true),
    ("swap", "ishmem_{T}_atomic_swap", true),
    ("cswap", "ishmem_{T}_atomic_compare_swap", false),
    ("finc", "ishmem_{T}_atomic_fetch_inc", false),
    ("inc", "ishmem_{T}_atomic_inc", false),
    ("fadd", "ishmem_{T}_atomic_fetch_add", false),
    ("add", "ishmem_{T}_atomic_add", false),
];

/// `ishmem_X` / `ishmemx_X` -> `shmem_X`.
fn osh_name(ishmem: &str) -> String {
    let base = ishmem.strip_prefix("ishmemx_").or_else(|| ishmem.strip_prefix("ishmem_")).expect("an ishmem name");
    format!("shmem_{base}")
}

/// `ishmemx_X_on_queue` -> `shmemx_X_on_queue`.
fn x_name(ishmemx: &str) -> String {
    format!("shmemx_{}", ishmemx.strip_prefix("ishmemx_").expect("an ishmemx name"))
}

fn spec_of(op: &Op) -> &'static str {
    if op.header == "ishmemx.h" || op.typed.is_some_and(|t| t.contains("scan")) {
        "1.6"
    } else {
        "1.5"
    }
}

/// OpenSHMEM's types of an op family (its specification table).
fn osh_types(op: &Op) -> &'static [&'static str] {
    let fam = op.typed.expect("a typed family");
    match op.class {
        table::RMA => osh::RMA,
        table::AMO_STD | table::AMO_STD_NBI => osh::AMO_EXT,
        table::AMO_EXT | table::AMO_EXT_NBI => osh::AMO_STD,
        table::AMO_BIT | table::AMO_BIT_NBI => osh::AMO_BIT,
        table::P2P => osh::P2P,
        table::REDUCE_BIT => osh::REDUCE_BIT,
        table::COLL if fam.contains("_max_") || fam.contains("_min_") => osh::REDUCE_MINMAX,
        table::COLL if fam.contains("_sum_") || fam.contains("_prod_") => osh::REDUCE_SUM,
        table::COLL => osh::RMA,
        c => panic!("{fam}: no OpenSHMEM type table for class {c:#x}"),
    }
}

/// The OpenSHMEM parameters of an op family: ishmem's, with OpenSHMEM's `const`s and handles.
fn osh_params(op: &Op) -> Vec<(&'static str, &'static str)> {
    let fam = op.typed.or(op.mem).expect("a named family");
    let mut p = op.params.to_vec();
    if fam.ends_with("_atomic_fetch") {
        p = vec![("const T *", "source"), ("int", "pe")];
    } else if fam.ends_with("_atomic_fetch_nbi") {
        p = vec![("T *", "fetch"), ("const T *", "source"), ("int", "pe")];
    }
    for x in &mut p {
        if x.1 == "cmp_values" {
            x.0 = "T *";
        }
        x.0 = handle(x.0);
    }
    p
}

/// ishmem's handle types under their OpenSHMEM names.
fn handle(t: &'static str) -> &'static str {
    match t {
        "ishmem_team_t" => "shmem_team_t",
        "ishmemx_queue_t" => "shmemx_queue_t",
        other => other,
    }
}

/// The ishmem type behind an OpenSHMEM TYPENAME of op's family, where ishmem has that form.
fn ishmem_type(op: &Op, tn: &str) -> Option<&'static CType> {
    table::by_name(tn).filter(|t| t.classes & op.class != 0)
}

/// A declaration's ABI: its return and parameter types, without names, `const` or the
/// spelling of the handle typedefs (shmem_team_t and ishmem_team_t are both int).
fn abi_sig(decl: &str) -> (String, Vec<String>) {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let norm = |t: &str| {
        let mut t = t.replace("const ", "");
        for (a, b) in [
            ("ishmem_team_config_t", "team_config_t"),
            ("shmem_team_config_t", "team_config_t"),
            ("ishmem_team_t", "int"),
            ("ishmemx_queue_t", "queue_t"),
            ("shmemx_queue_t", "queue_t"),
        ] {
            t = t.replace(a, b);
        }
        t.replace(' ', "")
    };
    let open = decl.find('(').expect("a declaration");
    let close = decl.rfind(')').expect("a declaration");
    let ret = norm(decl[..open].trim_end_matches(ident));
    let inner = decl[open + 1..close].trim();
    let params = if inner == "void" { Vec::new() } else { inner.split(", ").map(|p| norm(p.trim_end_matches(ident))).collect() };
    (ret, params)
}

/// `shmem_X` -> `shmem_ctx_X`.
fn ctx_name(osh: &str) -> String {
    format!("shmem_ctx_{}", osh.strip_prefix("shmem_").expect("a shmem name"))
}

/// A family's parameters with the context first.
fn ctx_params(params: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![("shmem_ctx_t", "ctx")];
    v.extend_from_slice(params);
    v
}

/// The Rust shim of a ctx form: the family's body (ishmem's parameter names and types) run
/// by `api::ctx::run`, which checks the context, turns a team context's PE number into the
/// world's and has the network track the operations as the context's.
fn ctx_shim(op: &Op, name: &str, ty: Option<&'static CType>, elem: usize) -> String {
    assert!(op.params.iter().any(|p| p.1 == "pe"), "{name}: a ctx form needs a pe parameter");
    let body = format!("ctx::run(F, ctx, pe, |pe| {})", op.body);
    rust_shim_of(name, op.ret, &ctx_params(op.params), ty, &body, elem)
}

/// The Rust shim of an OpenSHMEM name that takes a team: shmem.h's `shmem_team_t` is a
/// pointer-sized handle and ishmem's `ishmem_team_t` an int, so the name is an entry point of its
/// own (not an alias) that turns the handle into the team index (`api::team::index`) and runs
/// the family's body.
fn team_shim(
    name: &str,
    ret: &str,
    params: &[(&'static str, &'static str)],
    ty: Option<&'static CType>,
    body: &str,
    elem: usize,
) -> String {
    assert!(params.iter().any(|p| *p == ("shmem_team_t", "team")), "{name}: a team form needs a shmem_team_t team parameter");
    rust_shim_of(name, ret, params, ty, &format!("let team = team::index(team); {body}"), elem)
}

/// Stops the generator unless `decl` (the OpenSHMEM name) and its target are ABI-identical.
fn check_alias(decl: &str, target: &str, ishmem: &BTreeMap<String, String>) {
    let Some(td) = ishmem.get(target) else { panic!("{decl}: the target {target} is not an ishmem symbol") };
    assert_eq!(abi_sig(decl), abi_sig(td), "`{decl}` is not ABI-identical to its target `{td}`");
}

/// Whether a form passes or returns a `long double` by value (p, g): the C calling convention
/// puts it on the stack or in the x87 register st(0), which a Rust function cannot take or
/// return; those forms are assembly entry points (src/api/longdouble.rs).
fn by_value_x87(op: &Op, t: &CType) -> bool {
    t.name == "longdouble" && (op.ret == "T" || op.params.iter().any(|p| p.0 == "T"))
}

/// The team shim of an op family's OpenSHMEM name, where the family takes a team.
fn team_shim_of(op: &Op, name: &str, params: &[(&'static str, &'static str)], ty: Option<&'static CType>, elem: usize) -> Option<String> {
    params.contains(&("shmem_team_t", "team")).then(|| team_shim(name, op.ret, params, ty, op.body, elem))
}

/// Every row, in header order within each section (before sorting by section).
pub fn rows() -> Vec<Row> {
    let ishmem: BTreeMap<String, String> = all_decls().into_iter().map(|(_, _, n, d)| (n, d)).collect();
    let mut v = Vec::new();
    // A name is an alias of its ishmem target unless it takes or returns a team handle (a
    // pointer in shmem.h, an int in ishmem.h): then it is native, its shim converting the handle
    // (`shim`: generated; None: hand-written in src/api/team.rs, ctx.rs, queue_coll.rs).
    let exported =
        |v: &mut Vec<Row>, spec: &'static str, section: &'static str, name: String, decl: String, target: String, shim: Option<String>| {
            if decl.contains("shmem_team_t") {
                v.push(Row { name, spec, section, what: What::Native { decl, rust: shim } });
                return;
            }
            check_alias(&decl, &target, &ishmem);
            v.push(Row { name, spec, section, what: What::Exported { target, decl } });
        };
    for &(spec, section, name, decl, target) in FIXED_OSH {
        exported(&mut v, spec, section, name.to_string(), decl.to_string(), target.to_string(), None);
    }
    for op in OPS.iter().chain(HOST_OPS) {
        let spec = spec_of(op);
        let params = osh_params(op);
        // The OpenSHMEM names of this family, for the ctx forms: (name, the ishmem type and
        // element size where ishmem has the form).
        let mut names: Vec<(String, (Option<&'static CType>, usize))> = Vec::new();
        if let Some(pat) = op.typed {
            for &tn in osh_types(op) {
                let name = osh_name(&pat.replace("{T}", tn));
                match ishmem_type(op, tn) {
                    Some(t) => {
                        names.push((name.clone(), (Some(t), t.size)));
                        let decl = c_decl_of(&name, op.ret, &params, Some(t));
                        let shim = team_shim_of(op, &name, &params, Some(t), t.size);
                        exported(&mut v, spec, op.section, name, decl, pat.replace("{T}", t.name), shim);
                    }
                    None => {
                        // long double and the complex types: libishmem's own (native) names
                        let t = osh::OSH_ONLY.iter().find(|t| t.name == tn);
                        let t = t.unwrap_or_else(|| panic!("{pat}: ishmem lacks the OpenSHMEM type {tn}"));
                        names.push((name.clone(), (Some(t), t.size)));
                        let decl = c_decl_of(&name, op.ret, &params, Some(t));
                        let rust = if by_value_x87(op, t) {
                            None /* src/api/longdouble.rs: the x87 calling convention */
                        } else {
                            team_shim_of(op, &name, &params, Some(t), t.size)
                                .or_else(|| Some(rust_shim_of(&name, op.ret, &params, Some(t), op.body, t.size)))
                        };
                        v.push(Row { name, spec, section: op.section, what: What::Native { decl, rust } });
                    }
                }
            }
        }
        if let Some(pat) = op.sized {
            for &s in table::SIZES {
                let target = pat.replace("{S}", &s.to_string());
                let name = osh_name(&target);
                names.push((name.clone(), (None, s / 8)));
                let shim = team_shim_of(op, &name, &params, None, s / 8);
                exported(&mut v, spec, op.section, name.clone(), c_decl_of(&name, op.ret, &params, None), target, shim);
            }
        }
        if let Some(m) = op.mem {
            let name = osh_name(m);
            names.push((name.clone(), (None, 1)));
            let shim = team_shim_of(op, &name, &params, None, 1);
            exported(&mut v, spec, op.section, name.clone(), c_decl_of(&name, op.ret, &params, None), m.to_string(), shim);
        }
        if ["rma", "amo", "signal"].contains(&op.section) {
            for (n, (ty, elem)) in names {
                let name = ctx_name(&n);
                let decl = c_decl_of(&name, op.ret, &ctx_params(&params), ty);
                let x87 = ty.is_some_and(|t| by_value_x87(op, t));
                let what = What::Native { decl, rust: (!x87).then(|| ctx_shim(op, &name, ty, elem)) };
                v.push(Row { name, spec, section: op.section, what });
            }
        }
    }
    for &(spec, section, name, decl) in NATIVE_OSH {
        v.push(Row { name: name.to_string(), spec, section, what: What::Native { decl: decl.to_string(), rust: None } });
    }
    for &(name, decl) in DEPRECATED_OSH {
        v.push(Row {
            name: name.to_string(),
            spec: "1.5-deprecated",
            section: "deprecated",
            what: What::Native { decl: decl.to_string(), rust: None },
        });
    }
    // the untyped wait_until is shmem_long_wait_until (the C11 generic name is a macro after it)
    let op = OPS.iter().find(|o| o.typed == Some("ishmem_{T}_wait_until")).expect("the wait_until family");
    let decl = c_decl_of("shmem_wait_until", op.ret, &osh_params(op), table::by_name("long"));
    exported(&mut v, "1.5-deprecated", "deprecated", "shmem_wait_until".into(), decl, "ishmem_long_wait_until".into(), None);
    // deprecated: the 1.4 AMO spellings (aliases), the active-set reductions and typed waits
    for &(old, fam, fp) in AMO_OLD {
        let op = OPS.iter().find(|o| o.typed == Some(fam)).expect("the AMO family");
        let params = osh_params(op);
        for &tn in osh::AMO_DEPRECATED.iter().filter(|t| fp || !["float", "double"].contains(t)) {
            let t = ishmem_type(op, tn).expect("ishmem has every deprecated AMO type");
            let name = format!("shmem_{tn}_{old}");
            let decl = c_decl_of(&name, op.ret, &params, Some(t));
            exported(&mut v, "1.5-deprecated", "deprecated", name, decl, fam.replace("{T}", tn), None);
        }
    }
    for (ops, types) in [
        (&["and", "or", "xor"][..], &["short", "int", "long", "longlong"][..]),
        (&["max", "min"][..], &["short", "int", "long", "longlong", "float", "double", "longdouble"][..]),
        (&["sum", "prod"][..], &["short", "int", "long", "longlong", "float", "double", "longdouble", "complexd", "complexf"][..]),
    ] {
        for o in ops {
            for t in types {
                let c = table::by_name(t).or_else(|| osh::OSH_ONLY.iter().find(|x| x.name == *t)).expect("a type").c;
                let name = format!("shmem_{t}_{o}_to_all");
                let decl = format!(
                    "void {name}({c} *dest, const {c} *source, int nreduce, int PE_start, int logPE_stride, int PE_size, {c} *pWrk, long *pSync)"
                );
                v.push(Row { name, spec: "1.5-deprecated", section: "deprecated", what: What::Native { decl, rust: None } });
            }
        }
    }
    for t in ["short", "int", "long", "longlong"] {
        let c = table::by_name(t).expect("a type").c;
        let name = format!("shmem_{t}_wait");
        let decl = format!("void {name}({c} *ivar, {c} cmp_value)");
        v.push(Row { name, spec: "1.5-deprecated", section: "deprecated", what: What::Native { decl, rust: None } });
    }
    // shmemx.h: the CUDA-stream forms and the GPU queries of ishmemx.h
    for op in OPS.iter().filter(|o| has_on_queue(o) || is_coll(o)) {
        let params: Vec<(&str, &str)> = queue_params(op).into_iter().map(|(t, n)| (handle(t), n)).collect();
        for i in instances(op) {
            let target = queue_name(&i.name);
            let name = x_name(&target);
            let shim = params.contains(&("shmem_team_t", "team")).then(|| team_shim(&name, "void", &params, i.ty, &queue_body(op), i.elem));
            exported(&mut v, "shmemx", "on_queue", name.clone(), c_decl_of(&name, "void", &params, i.ty), target, shim);
        }
    }
    for (_, section, n, d) in FIXED.iter().filter(|f| f.1 == "on_queue" || f.1 == "gpu") {
        if n.ends_with("cumodule_init") || n.ends_with("cuda_register_binder") {
            continue; /* CUDA module plumbing: ishmemx.h's business */
        }
        let name = x_name(n);
        let decl = d.replace(n, &name).replace("ishmemx_queue_t", "shmemx_queue_t").replace("ishmem_team_t", "shmem_team_t");
        exported(&mut v, "shmemx", section, name, decl, n.to_string(), None);
    }
    let mut seen = BTreeSet::new();
    for r in &v {
        assert!(seen.insert(r.name.clone()), "{} is listed twice", r.name);
    }
    v.sort_by_key(|r| SECTIONS.iter().position(|s| *s == r.section).unwrap_or(SECTIONS.len()));
    v
}

/// The `#define ISHMEM*_NAME value` lines of an ishmem header template, as (NAME, value).
fn template_defines<'a>(pre: &'a str, prefix: &str) -> Vec<(&'a str, &'a str)> {
    pre.lines()
        .filter_map(|l| l.strip_prefix("#define ")?.strip_prefix(prefix)?.split_once(' '))
        .filter(|(n, _)| !n.contains('('))
        .collect()
}

/// One generic name of shmem.h or shmemx.h: its parameters and the typed names it picks from.
struct Generic {
    name: String,
    ret: &'static str,
    params: Vec<(&'static str, &'static str)>,
    /// (C type, typed function)
    cases: Vec<(&'static str, String)>,
    /// The context forms (shmem.h's rma, amo and signal families): (C type, typed function),
    /// picked when the first argument is a shmem_ctx_t.
    ctx_cases: Vec<(&'static str, String)>,
}

fn generics(header: &str, exported: &BTreeSet<String>) -> Vec<Generic> {
    let mut v = Vec::new();
    for op in OPS.iter().chain(HOST_OPS) {
        let (Some(g), Some(pat)) = (op.generic, op.typed) else {
            continue;
        };
        let types = table::of_class(op.class).filter(|t| t.classes & table::GENERIC != 0);
        if header == "shmem.h" {
            let cases: Vec<(&str, String)> =
                types.map(|t| (t.c, osh_name(&pat.replace("{T}", t.name)))).filter(|(_, f)| exported.contains(f)).collect();
            let ctx_cases = if ["rma", "amo", "signal"].contains(&op.section) {
                cases.iter().map(|(c, f)| (*c, ctx_name(f))).filter(|(_, f)| exported.contains(f)).collect()
            } else {
                Vec::new()
            };
            v.push(Generic { name: osh_name(g), ret: op.ret, params: osh_params(op), cases, ctx_cases });
        } else if !HOST_OPS.iter().any(|h| std::ptr::eq(h, op)) && (has_on_queue(op) || is_coll(op)) {
            let cases = types.map(|t| (t.c, x_name(&queue_name(&pat.replace("{T}", t.name))))).collect();
            let params = queue_params(op).into_iter().map(|(t, n)| (handle(t), n)).collect();
            v.push(Generic { name: x_name(&queue_name(g)), ret: "void", params, cases, ctx_cases: Vec::new() });
        }
    }
    v
}

fn generic_c(g: &Generic) -> String {
    let args: Vec<&str> = g.params.iter().map(|(_, n)| *n).collect();
    let at = g.params.iter().position(|(t, _)| t.starts_with("T *") || t.starts_with("const T *")).expect("a typed pointer");
    let on = g.params[at].1;
    let mut s = String::new();
    if g.ctx_cases.is_empty() {
        let _ = writeln!(s, "#define {}({}) _Generic(*({on}), \\", g.name, args.join(", "));
        for (k, (c, f)) in g.cases.iter().enumerate() {
            let sep = if k + 1 == g.cases.len() { "" } else { "," };
            let _ = writeln!(s, "    {c}: {f}{sep} \\");
        }
        let _ = writeln!(s, "    )({})", args.join(", "));
        return s;
    }
    // With or without a context first: the first argument's type picks the form; the context
    // form is dispatched on the pointer type of the argument after the context (T * or
    // const T *), the plain one on the type it points to, as the forms without contexts are.
    assert_eq!(at, 0, "{}: the typed pointer must come first", g.name);
    let _ = writeln!(s, "#define {}(...) _Generic((SHMEMI_ARG0(__VA_ARGS__, 0)), \\", g.name);
    let _ = writeln!(s, "    shmem_ctx_t: _Generic((SHMEMI_ARG1(__VA_ARGS__, 0)), \\");
    for (c, f) in &g.ctx_cases {
        let _ = writeln!(s, "        {c} *: {f}, const {c} *: {f}, \\");
    }
    let _ = writeln!(s, "        default: shmemi_c11_no_match), \\");
    let _ = writeln!(s, "    default: _Generic(*(SHMEMI_ARG0(__VA_ARGS__, 0)), \\");
    for (c, f) in &g.cases {
        let _ = writeln!(s, "        {c}: {f}, \\");
    }
    let _ = writeln!(s, "        default: shmemi_c11_no_match) \\");
    let _ = writeln!(s, "    )(__VA_ARGS__)");
    s
}

fn generic_cxx(g: &Generic) -> String {
    let mut s = String::new();
    let args: Vec<&str> = g.params.iter().map(|(_, n)| *n).collect();
    for (c, f) in &g.cases {
        let t = table::TYPES.iter().find(|t| t.c == *c).expect("a table type");
        let _ = writeln!(s, "inline {} {{ return {f}({}); }}", c_decl_of(&g.name, g.ret, &g.params, Some(t)), args.join(", "));
    }
    for (c, f) in &g.ctx_cases {
        let t = table::TYPES.iter().find(|t| t.c == *c).expect("a table type");
        let _ = writeln!(
            s,
            "inline {} {{ return {f}(ctx, {}); }}",
            c_decl_of(&g.name, g.ret, &ctx_params(&g.params), Some(t)),
            args.join(", ")
        );
    }
    s
}

/// A constant of ishmem.h under OpenSHMEM's spelling: a team index `((ishmem_team_t)N)` becomes
/// the handle of that team, `((shmem_team_t)N+1)` (api::team::handle: index + 1, so that
/// SHMEM_TEAM_INVALID, index -1, is the null handle).
fn team_const(val: &str) -> String {
    match val.strip_prefix("((ishmem_team_t)").and_then(|r| r.strip_suffix(')')) {
        Some(n) => format!("((shmem_team_t){})", n.parse::<i64>().expect("a team index") + 1),
        None => val.to_string(),
    }
}

/// The constants of shmem.h: ishmem.h's under OpenSHMEM names (one source for the values the
/// aliased functions take and return), the deprecated `_SHMEM_` spellings, and the pSync sizes.
fn constants() -> String {
    let mut s = String::from("/* Constants: the values of ishmem.h's ISHMEM_* ones (the functions are the same). */\n");
    for (n, val) in template_defines(include_str!("../templates/ishmem_pre.h"), "ISHMEM_") {
        if n == "PATCH_VERSION" {
            continue;
        }
        let _ = writeln!(s, "#define SHMEM_{n} {}", team_const(val));
    }
    s.push_str(
        "\n/* The work-array sizes and value of the deprecated active-set collectives (not provided: the\n \
         * constants are here so that programs declaring pSync/pWrk arrays compile). */\n\
         #define SHMEM_SYNC_VALUE 0L\n",
    );
    for n in [
        "SYNC_SIZE",
        "BCAST_SYNC_SIZE",
        "REDUCE_SYNC_SIZE",
        "BARRIER_SYNC_SIZE",
        "COLLECT_SYNC_SIZE",
        "ALLTOALL_SYNC_SIZE",
        "ALLTOALLS_SYNC_SIZE",
        "REDUCE_MIN_WRKDATA_SIZE",
    ] {
        let _ = writeln!(s, "#define SHMEM_{n} 64");
    }
    s.push_str("\n/* Deprecated spellings. */\n");
    for n in [
        "MAJOR_VERSION",
        "MINOR_VERSION",
        "MAX_NAME_LEN",
        "VENDOR_STRING",
        "CMP_EQ",
        "CMP_NE",
        "CMP_GT",
        "CMP_GE",
        "CMP_LT",
        "CMP_LE",
        "SYNC_VALUE",
        "BCAST_SYNC_SIZE",
        "REDUCE_SYNC_SIZE",
        "BARRIER_SYNC_SIZE",
        "COLLECT_SYNC_SIZE",
        "REDUCE_MIN_WRKDATA_SIZE",
    ] {
        let _ = writeln!(s, "#define _SHMEM_{n} SHMEM_{n}");
    }
    s
}

fn header(name: &str, pre: &str, rows: &[Row]) -> String {
    let x = name == "shmemx.h";
    let mut s = String::from(pre);
    if x {
        for (n, val) in template_defines(include_str!("../templates/ishmemx_pre.h"), "ISHMEMX_") {
            let _ = writeln!(s, "#define SHMEMX_{n} {}", team_const(val));
        }
    } else {
        s.push_str(&constants());
    }
    s.push_str("\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    let mut last = "";
    let mut exported = BTreeSet::new();
    for r in rows {
        let (What::Exported { decl, .. } | What::Native { decl, .. }) = &r.what else {
            continue;
        };
        exported.insert(r.name.clone());
        if (r.spec == "shmemx") != x {
            continue;
        }
        if r.section != last {
            let _ = writeln!(s, "\n/* ---- {} ---- */", r.section);
            last = r.section;
        }
        if r.name == "shmem_wait_until" {
            // C++'s overload shmem_wait_until(long *, int, long) is this very signature
            let _ = writeln!(s, "#ifndef __cplusplus\n{decl};\n#endif");
        } else {
            let _ = writeln!(s, "{decl};");
        }
    }
    s.push_str("\n#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n");
    s.push_str("/* ---- generic names: C11 _Generic, C++ overloads ---- */\n#ifdef __cplusplus\n");
    let gs = generics(if x { "shmemx.h" } else { "shmem.h" }, &exported);
    for g in &gs {
        s.push_str(&generic_cxx(g));
    }
    s.push_str("#else /* C11 */\n");
    for g in &gs {
        s.push_str(&generic_c(g));
    }
    let guard = if x { "SHMEMX_H" } else { "SHMEM_H" };
    let _ = write!(s, "#endif /* __cplusplus */\n\n#endif /* {guard} */\n");
    s
}

pub fn shmem_h(rows: &[Row]) -> String {
    header("shmem.h", include_str!("../templates/shmem_pre.h"), rows)
}

pub fn shmemx_h(rows: &[Row]) -> String {
    header("shmemx.h", include_str!("../templates/shmemx_pre.h"), rows)
}

/// `abi/shmem-symbols.txt`: every name, exported or missing; build.rs aliases the exported ones.
pub fn symbols(rows: &[Row]) -> String {
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let n_exp = rows.iter().filter(|r| !matches!(r.what, What::Missing(_))).count();
    let n_native = rows.iter().filter(|r| matches!(r.what, What::Native { .. })).count();
    let n_osh = rows.iter().filter(|r| r.spec != "shmemx").count();
    let mut s = format!(
        "# The OpenSHMEM names of libishmem: every C name of OpenSHMEM 1.5 (deprecated ones included), the 1.6\n\
         # additions (ibput/ibget, scans, signal_add/set, team_ptr, pe_quiet, query_initialized) and the\n\
         # shmemx_* extensions. Generated by ishmem-gen (gen/src/oshmem.rs) from src/table.rs and\n\
         # gen/src/ops.rs; do not edit. An exported name is an alias of its ishmem symbol (the same\n\
         # address, made by build.rs from this file; tests/scripts/check_shmem_abi.sh checks it); a\n\
         # native one is a function of libishmem's own with no ishmem counterpart (contexts, realloc,\n\
         # malloc_with_hints: src/api/ctx.rs, src/api/generated_ctx.rs, src/api/memory.rs).\n\
         # {} names ({n_osh} of OpenSHMEM): {n_exp} exported ({n_native} native), {} missing (abi/shmem-missing.txt).\n\
         # name\tstatus\tspec\tthe ishmem symbol it aliases (native: -), or why it is missing\n",
        rows.len(),
        rows.len() - n_exp
    );
    for r in sorted {
        let (status, what) = match &r.what {
            What::Exported { target, .. } => ("exported", target.as_str()),
            What::Native { .. } => ("native", "-"),
            What::Missing(why) => ("missing", *why),
        };
        let _ = writeln!(s, "{}\t{status}\t{}\t{what}", r.name, r.spec);
    }
    s
}

/// `src/api/generated_ctx.rs`: the Rust shims of the native rows that have one (the ctx forms).
pub fn rust_shims(rows: &[Row]) -> String {
    let mut s = String::from(
        "//! Generated by ishmem-gen (gen/src/oshmem.rs) from src/table.rs and gen/src/ops.rs: the\n\
         //! OpenSHMEM context forms (shmem_ctx_*) of the rma, amo and signal families, each the\n\
         //! family's body run by `api::ctx::run`. Do not edit.\n\
         //! Their safety contract is the C API's: pointers as the specification defines them.\n\n\
         #![allow(clippy::missing_safety_doc)]\n\n\
         use crate::api::{amo, coll, ctx, queue_coll, rma, signal, team};\nuse crate::ffi::guard;\nuse std::ffi::c_int;\n\n",
    );
    for r in rows {
        if let What::Native { rust: Some(text), .. } = &r.what {
            s.push_str(text);
        }
    }
    s
}

/// `abi/shmem-missing.txt`: the OpenSHMEM names libishmem does not export yet, by reason.
pub fn missing(rows: &[Row]) -> String {
    let mut by: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in rows {
        if let What::Missing(why) = r.what {
            by.entry(why).or_default().push(&r.name);
        }
    }
    let n: usize = by.values().map(Vec::len).sum();
    let mut s = format!(
        "# The {n} OpenSHMEM 1.5/1.6 C names libishmem does not export (generated by ishmem-gen from\n\
         # gen/src/oshmem.rs; abi/shmem-symbols.txt has every name). name<TAB>why\n"
    );
    for (why, mut names) in by {
        names.sort_unstable();
        let _ = writeln!(s, "\n# {why} ({})", names.len());
        for n in names {
            let _ = writeln!(s, "{n}\t{why}");
        }
    }
    s
}
