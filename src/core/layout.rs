//! The layouts Rust and the CUDA/C side share (include/ishmem/device_state.h): the device
//! state, the proxy slot, the team descriptor and the team area's words, and every constant of
//! the header, against what a C compiler makes of the header. Every field is compared by offset
//! and size, every `#define ISHMEMI_*` by value, and a field or constant of the header that the
//! test does not know fails it (so one added on one side only cannot pass). The team area's
//! Rust-only words (core::team) must not overlap the header's or each other. (A test of the
//! core: it compares the core's team layout with the transport's device state.)

use crate::core::team::{self, TeamDesc};
use crate::transport::cuda::state::*;
use std::mem::{offset_of, size_of};

/// The size of a field, through a projection (`|s: &T| &s.f`).
fn fsize<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

macro_rules! fields {
    ($out:ident, $ty:ty, $c:literal { $($f:ident),* $(,)? }) => {{
        $out.push((format!("sizeof {}", $c), size_of::<$ty>() as i128));
        $(
            $out.push((format!("{}.{} offset", $c, stringify!($f)), offset_of!($ty, $f) as i128));
            $out.push((format!("{}.{} size", $c, stringify!($f)), fsize(|s: &$ty| &s.$f) as i128));
        )*
    }};
}

/// (C expression as printed, Rust value), fields and then constants.
fn rust_side() -> Vec<(String, i128)> {
    let mut v: Vec<(String, i128)> = Vec::new();
    fields!(v, DevState, "ishmemi_dev_state_t" { my_pe, n_pes, heap_base, heap_size, sync_offset, initialized, flags, peer_base, proxy_ring });
    fields!(v, TeamDesc, "ishmemi_team_desc_t" { start, stride, size, my_pe, sync_offset, num_contexts, flags });
    v.push(("sizeof ishmemi_proxy_slot_t".into(), 64));
    // (header name, Rust value) for every #define of the header.
    let consts: Vec<(&str, i128)> = vec![
        ("ISHMEMI_MAX_LOCAL_PES", MAX_LOCAL_PES as i128),
        ("ISHMEMI_SYNC_BYTES", SYNC_BYTES as i128),
        ("ISHMEMI_DEV_F_DEBUG", DEV_F_DEBUG as i128),
        ("ISHMEMI_PROXY_SLOTS", PROXY_SLOTS as i128),
        ("ISHMEMI_PROXY_BOUNCE_BYTES", PROXY_BOUNCE_BYTES as i128),
        ("ISHMEMI_PROXY_HELD", PROXY_HELD as i128),
        ("ISHMEMI_PROXY_REPLY", PROXY_REPLY as i128),
        ("ISHMEMI_PROXY_PUT", PROXY_PUT as i128),
        ("ISHMEMI_PROXY_GET", PROXY_GET as i128),
        ("ISHMEMI_PROXY_P", PROXY_P as i128),
        ("ISHMEMI_PROXY_G", PROXY_G as i128),
        ("ISHMEMI_PROXY_AMO", PROXY_AMO as i128),
        ("ISHMEMI_PROXY_FENCE", PROXY_FENCE as i128),
        ("ISHMEMI_PROXY_QUIET", PROXY_QUIET as i128),
        ("ISHMEMI_PROXY_PUT_SIGNAL", PROXY_PUT_SIGNAL as i128),
        ("ISHMEMI_PROXY_NOP", PROXY_NOP as i128),
        ("ISHMEMI_PROXY_COLL", PROXY_COLL as i128),
        ("ISHMEMI_COLL_SYNC", COLL_SYNC as i128),
        ("ISHMEMI_COLL_BROADCAST", COLL_BROADCAST as i128),
        ("ISHMEMI_COLL_FCOLLECT", COLL_FCOLLECT as i128),
        ("ISHMEMI_COLL_COLLECT", COLL_COLLECT as i128),
        ("ISHMEMI_COLL_ALLTOALL", COLL_ALLTOALL as i128),
        ("ISHMEMI_COLL_REDUCE", COLL_REDUCE as i128),
        ("ISHMEMI_COLL_INSCAN", COLL_INSCAN as i128),
        ("ISHMEMI_COLL_EXSCAN", COLL_EXSCAN as i128),
        ("ISHMEMI_COLL_T_UNSIGNED", COLL_T_UNSIGNED as i128),
        ("ISHMEMI_COLL_T_SIGNED", COLL_T_SIGNED as i128),
        ("ISHMEMI_COLL_T_FLOAT", COLL_T_FLOAT as i128),
        ("ISHMEMI_COLL_OP_AND", COLL_OP_AND as i128),
        ("ISHMEMI_COLL_OP_OR", COLL_OP_OR as i128),
        ("ISHMEMI_COLL_OP_XOR", COLL_OP_XOR as i128),
        ("ISHMEMI_COLL_OP_MAX", COLL_OP_MAX as i128),
        ("ISHMEMI_COLL_OP_MIN", COLL_OP_MIN as i128),
        ("ISHMEMI_COLL_OP_SUM", COLL_OP_SUM as i128),
        ("ISHMEMI_COLL_OP_PROD", COLL_OP_PROD as i128),
        ("ISHMEMI_SYNC_BARRIER_ARRIVE", SYNC_BARRIER_ARRIVE as i128),
        ("ISHMEMI_SYNC_BARRIER_EPOCH", SYNC_BARRIER_EPOCH as i128),
        ("ISHMEMI_SYNC_TEAM_AREA", SYNC_TEAM_AREA as i128),
        ("ISHMEMI_SYNC_TEAMS_MAX", SYNC_TEAMS_MAX as i128),
        ("ISHMEMI_SYNC_PROXY_TICKET", SYNC_PROXY_TICKET as i128),
        ("ISHMEMI_SYNC_PROXY_QUIET", SYNC_PROXY_QUIET as i128),
        ("ISHMEMI_SYNC_PROXY_BOUNCE", SYNC_PROXY_BOUNCE as i128),
        ("ISHMEMI_TEAM_F_USED", team::F_USED as i128),
        ("ISHMEMI_TEAM_F_PREDEFINED", team::F_PREDEFINED as i128),
        ("ISHMEMI_TEAM_F_REMOTE", team::F_REMOTE as i128),
        ("ISHMEMI_TEAM_AREA_BYTES", team::AREA_BYTES as i128),
        ("ISHMEMI_TEAM_SYNC_EPOCH", team::W_EPOCH as i128),
        ("ISHMEMI_TEAM_SYNC_VALUE", team::W_VALUE as i128),
        ("ISHMEMI_TEAM_SYNC_ROUND", team::W_ROUND as i128),
        ("ISHMEMI_TEAM_SYNC_ROUNDS", team::ROUNDS as i128),
        ("ISHMEMI_TEAM_DESC_WORD", team::W_DESC as i128),
        ("ISHMEMI_TEAM_SPLIT_WORD", team::W_SPLIT as i128),
        ("ISHMEMI_TEAM_SPLIT_WORDS", team::SPLIT_WORDS as i128),
        ("ISHMEMI_TEAM_PUSH_COUNT", team::W_PUSH_COUNT as i128),
        ("ISHMEMI_TEAM_PUSH_FLAGS", team::W_PUSH_FLAGS as i128),
        ("ISHMEMI_TEAM_PUSH_PES", team::PUSH_PES as i128),
        ("ISHMEMI_TEAM_PUSH_CLASSES", team::PUSH_CLASSES as i128),
        ("ISHMEMI_TEAM_PUSH_READY", team::W_PUSH_READY as i128),
        ("ISHMEMI_TEAM_PUSH_SCRATCH", team::PUSH_SCRATCH as i128),
        ("ISHMEMI_TEAM_PUSH_SCRATCH_BYTES", team::PUSH_SCRATCH_BYTES as i128),
        ("ISHMEMI_TEAM_BCAST_SCRATCH", team::BCAST_SCRATCH as i128),
        ("ISHMEMI_TEAM_BCAST_SLOT", team::BCAST_SLOT as i128),
    ];
    v.extend(consts.into_iter().map(|(n, val)| (n.to_string(), val)));
    v
}

/// The header's text without comments.
fn header() -> String {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/ishmem/device_state.h")).unwrap();
    let (mut out, mut rest) = (String::new(), text.as_str());
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    out + rest
}

#[test]
fn layout_of_device_state_and_team_area_matches_the_header() {
    let rust = rust_side();
    let h = header();
    // Every #define of the header is compared (the include guard aside).
    let defines: Vec<&str> = h
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "ISHMEM_DEVICE_STATE_H")
        .collect();
    let known: Vec<&str> = rust.iter().map(|(n, _)| n.as_str()).collect();
    let unknown: Vec<&&str> = defines.iter().filter(|d| !known.contains(d)).collect();
    assert!(unknown.is_empty(), "device_state.h defines constants this test does not compare: {unknown:?}");
    // Every field of every struct of the header is compared.
    let mut fields = Vec::new();
    let mut rest = h.as_str();
    while let Some(i) = rest.find("typedef struct") {
        let body = &rest[i..];
        let (open, close) = (body.find('{').unwrap(), body.find('}').unwrap());
        let name = body[close + 1..].split(';').next().unwrap().trim().to_string();
        for decl in body[open + 1..close].split(';').map(str::trim).filter(|d| !d.is_empty()) {
            let f = decl.split_whitespace().last().unwrap();
            fields.push(format!("{name}.{} offset", f.split('[').next().unwrap()));
        }
        rest = &body[close..];
    }
    assert!(fields.len() >= 17, "found only {} fields in device_state.h", fields.len());
    let missing: Vec<&String> = fields.iter().filter(|f| !known.contains(&f.as_str()) && !f.starts_with("ishmemi_proxy_slot_t.")).collect();
    assert!(missing.is_empty(), "device_state.h has fields this test does not compare: {missing:?}");

    // What the C compiler makes of the header.
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <ishmem/device_state.h>\n\
         int main(void) {\n",
    );
    for (n, _) in &rust {
        let expr = if let Some(t) = n.strip_prefix("sizeof ") {
            format!("sizeof({t})")
        } else if let Some(f) = n.strip_suffix(" offset") {
            let (t, m) = f.split_once('.').unwrap();
            format!("offsetof({t}, {m})")
        } else if let Some(f) = n.strip_suffix(" size") {
            let (t, m) = f.split_once('.').unwrap();
            format!("sizeof((({t} *)0)->{m})")
        } else {
            n.clone()
        };
        src += &format!("printf(\"%s %llu\\n\", \"{n}\", (unsigned long long)({expr}));\n");
    }
    src += "return 0;\n}\n";
    let dir = std::env::temp_dir().join(format!("ishmem-dev-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c_file, exe) = (dir.join("layout.c"), dir.join("layout"));
    std::fs::write(&c_file, &src).unwrap();
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/include");
    let cc = match std::process::Command::new("cc").arg("-I").arg(include).arg("-o").arg(&exe).arg(&c_file).output() {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: no C compiler (cc: {e})");
            return;
        }
    };
    assert!(cc.status.success(), "cc failed:\n{}", String::from_utf8_lossy(&cc.stderr));
    let out = std::process::Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success());
    let c_out = String::from_utf8(out.stdout).unwrap();
    let got: Vec<&str> = c_out.lines().collect();
    assert_eq!(got.len(), rust.len());
    let bad: Vec<String> = rust
        .iter()
        .zip(&got)
        .map(|((n, v), g)| (format!("{n} {}", *v as u64), g))
        .filter(|(e, g)| e.as_str() != **g)
        .map(|(e, g)| format!("Rust {e} / C {g}"))
        .collect();
    assert!(bad.is_empty(), "device_state.h and the Rust side differ:\n{}", bad.join("\n"));
    println!("{} offsets, sizes and constants of device_state.h match", rust.len());
}

/// The team area's words (core::team), the header's and the Rust-only ones, do not overlap:
/// (first word, words) of each use.
#[test]
fn layout_of_team_area_words_do_not_overlap() {
    let desc_words = size_of::<TeamDesc>() / 8;
    let mut uses: Vec<(&str, usize, usize)> = vec![
        ("W_EPOCH", team::W_EPOCH, 1),
        ("W_VALUE", team::W_VALUE, 1),
        ("W_HEAP_BASE", team::W_HEAP_BASE, 1),
        ("W_ABORT", team::W_ABORT, 1),
        ("W_ROUND..", team::W_ROUND, team::ROUNDS),
        ("W_DESC..", team::W_DESC, desc_words),
        ("W_ENTRY..", team::W_ENTRY, team::ENTRY_WORDS),
        ("W_MEMCALL..", team::W_MEMCALL, 8),
        ("W_SPLIT..", team::W_SPLIT, team::SPLIT_WORDS),
        ("W_PUSH_COUNT..", team::W_PUSH_COUNT, team::PUSH_CLASSES),
        ("W_NODE_ARRIVE", team::W_NODE_ARRIVE, 1),
        ("W_NODE_RELEASE", team::W_NODE_RELEASE, 1),
        ("W_BCAST_RING", team::W_BCAST_RING, 1),
        ("W_BCAST_PAR", team::W_BCAST_PAR, 1),
        ("W_BCAST_ANN_ROOT", team::W_BCAST_ANN_ROOT, 1),
        ("W_BCAST_ANN_COUNT", team::W_BCAST_ANN_COUNT, 1),
        ("W_TREE_COUNT", team::W_TREE_COUNT, 1),
        ("W_TREE_DOWN", team::W_TREE_DOWN, 1),
        ("W_TREE_OFF", team::W_TREE_OFF, 1),
        ("W_TREE_TOTAL", team::W_TREE_TOTAL, 1),
        ("W_TREE_UP..", team::W_TREE_UP, 24),
        ("W_TREE_SIZE..", team::W_TREE_SIZE, 24),
        ("W_TREE_BCAST", team::W_TREE_BCAST, 1),
        ("W_PUSH_FLAGS..", team::W_PUSH_FLAGS, team::PUSH_PES * team::PUSH_CLASSES),
        ("W_PUSH_READY..", team::W_PUSH_READY, team::PUSH_PES * 2),
        ("PUSH_SCRATCH..", team::PUSH_SCRATCH / 8, team::PUSH_SCRATCH_BYTES / 8),
        ("BCAST_SCRATCH..", team::BCAST_SCRATCH / 8, 2 * team::BCAST_SLOT / 8),
    ];
    uses.sort_by_key(|u| u.1);
    for w in uses.windows(2) {
        assert!(
            w[0].1 + w[0].2 <= w[1].1,
            "team area: {} (words {}..{}) overlaps {} (from word {})",
            w[0].0,
            w[0].1,
            w[0].1 + w[0].2,
            w[1].0,
            w[1].1
        );
    }
    let last = uses.last().unwrap();
    assert!((last.1 + last.2) * 8 <= team::AREA_BYTES, "team area: {} ends past AREA_BYTES", last.0);
}
