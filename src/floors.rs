//! The floors of the source tree (docs/ARCHITECTURE.md, "The floors"), checked: every path a
//! file names (`crate::a::b`, `super::x`, a child module `x::`) is resolved to the file that
//! holds the module, and a file may name files on its own floor or below, never above. The
//! test also fails on any circle between the rooms and prints the file-level import circles
//! (`cargo test --lib floors -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The rooms from the top down; a file's floor is its room's (the first path segment under
/// `src/`). `api` may start the proxy, the proxy may not call the C symbols.
pub const FLOORS: &[(&str, u32)] = &[
    ("proptests", 9),
    ("api", 8),
    ("proxy", 7),
    ("core", 6),
    ("transport", 5),
    ("heap", 4),
    ("wait", 4),
    ("ffi", 3),
    ("op", 3),
    ("bootstrap", 2),
    ("env", 1),
    ("table", 1),
    ("floors", 0),
];

/// A source file: its module path (`core::coll`) and text.
struct File {
    module: Vec<String>,
    path: PathBuf,
    text: String,
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().unwrap() != "bin" {
                collect(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn module_of(src: &Path, p: &Path) -> Vec<String> {
    let rel = p.strip_prefix(src).unwrap().with_extension("");
    let mut m: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if m.last().is_some_and(|s| s == "mod" || s == "lib") {
        m.pop();
    }
    m
}

/// The text without comments and string literals (so prose naming a module is no import).
fn code_only(t: &str) -> String {
    let b = t.as_bytes();
    let mut out = String::with_capacity(t.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' && !(i > 0 && b[i - 1] == b'\'') {
            // a raw string's hashes are not handled: the tree has none holding a `"`.
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every path starting at `b[i..]` (an identifier), with `use` groups expanded.
fn paths_at(b: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        let s = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if s == i {
            break;
        }
        segs.push(String::from_utf8_lossy(&b[s..i]).into_owned());
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if b[i..].starts_with(b"::") {
            i += 2;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && b[i] == b'{' {
                i += 1;
                loop {
                    while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
                        i += 1;
                    }
                    if i >= b.len() || b[i] == b'}' {
                        return i + 1;
                    }
                    if b[i] == b'*' {
                        out.push(segs.clone());
                        i += 1;
                        continue;
                    }
                    let before = i;
                    i = paths_at(b, i, &segs, out);
                    // skip `as x`
                    while i < b.len() && b[i] != b',' && b[i] != b'}' {
                        i += 1;
                    }
                    if i == before {
                        i += 1;
                    }
                }
            }
            continue;
        }
        break;
    }
    out.push(segs);
    i
}

/// The module paths a file names, absolute (`["core", "coll", "Team"]`).
fn names(f: &File, children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let code = code_only(&f.text);
    let b = code.as_bytes();
    let mut raw = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':')) {
            let s = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let w = &code[s..i];
            let rest = &b[i..];
            let is_path = rest.starts_with(b"::");
            if is_path && (w == "crate" || w == "super" || w == "self" || children.contains(w)) {
                let mut found = Vec::new();
                i = paths_at(b, s, &[], &mut found);
                raw.extend(found);
            }
        } else {
            i += 1;
        }
    }
    let mut out = Vec::new();
    for p in raw {
        let mut base: Vec<String> = f.module.clone();
        let mut rest: &[String] = &p;
        match p[0].as_str() {
            "crate" => {
                base.clear();
                rest = &p[1..];
            }
            "self" => rest = &p[1..],
            "super" => {
                // `super` of a file `a/b.rs` (module a::b) is `a`; of `a/b/mod.rs` too (a::b's parent).
                base.pop();
                rest = &p[1..];
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            _ => {}
        }
        base.extend(rest.iter().cloned());
        out.push(base);
    }
    out
}

/// The room's floor of a module path, if it is one of ours.
pub fn floor(module: &[String]) -> Option<u32> {
    let room = module.first()?;
    FLOORS.iter().find(|(r, _)| r == room).map(|&(_, f)| f)
}

/// The graph: file index -> the files it names.
fn graph(files: &[File]) -> Vec<BTreeSet<usize>> {
    let by_module: BTreeMap<Vec<String>, usize> = files.iter().enumerate().map(|(i, f)| (f.module.clone(), i)).collect();
    files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let children: BTreeSet<String> = by_module
                .keys()
                .filter(|m| m.len() == f.module.len() + 1 && m.starts_with(&f.module))
                .map(|m| m.last().unwrap().clone())
                .collect();
            let mut to = BTreeSet::new();
            for p in names(f, &children) {
                // the deepest module file the path reaches
                let mut best = None;
                for n in 1..=p.len() {
                    if let Some(&j) = by_module.get(&p[..n]) {
                        best = Some(j);
                    }
                }
                if let Some(j) = best {
                    if j != i {
                        to.insert(j);
                    }
                }
            }
            to
        })
        .collect()
}

/// Strongly connected components (Tarjan), each as a sorted list of nodes.
fn sccs(g: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct T<'a> {
        g: &'a [BTreeSet<usize>],
        idx: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.idx[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        for &w in t.g[v].iter() {
            match t.idx[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                _ => {}
            }
        }
        if Some(t.low[v]) == t.idx[v] {
            let mut c = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on[w] = false;
                c.push(w);
                if w == v {
                    break;
                }
            }
            c.sort();
            t.out.push(c);
        }
    }
    let n = g.len();
    let mut t = T { g, idx: vec![None; n], low: vec![0; n], on: vec![false; n], stack: vec![], next: 0, out: vec![] };
    for v in 0..n {
        if t.idx[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out
}

fn load() -> Vec<File> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    collect(&src, &mut paths);
    paths.sort();
    paths.into_iter().map(|p| File { module: module_of(&src, &p), text: std::fs::read_to_string(&p).unwrap(), path: p }).collect()
}

fn name(f: &File) -> String {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    f.path.strip_prefix(&src).unwrap().display().to_string()
}

#[test]
fn no_file_names_a_file_above_its_floor() {
    let files = load();
    let g = graph(&files);
    let mut bad = Vec::new();
    for (i, to) in g.iter().enumerate() {
        let Some(fi) = floor(&files[i].module) else { continue };
        for &j in to {
            let Some(fj) = floor(&files[j].module) else { continue };
            if fj > fi {
                bad.push(format!("{} (floor {fi}) names {} (floor {fj})", name(&files[i]), name(&files[j])));
            }
        }
    }
    // the file-level circles, for the record
    let circles: Vec<_> = sccs(&g).into_iter().filter(|c| c.len() > 1).collect();
    for c in &circles {
        let names: Vec<_> = c.iter().map(|&i| name(&files[i])).collect();
        println!("import circle of {} files: {}", c.len(), names.join(" "));
    }
    // the rooms: a circle between two rooms is an upward arrow somewhere
    for c in &circles {
        let rooms: BTreeSet<_> = c.iter().filter_map(|&i| files[i].module.first().cloned()).collect();
        if rooms.len() > 1 {
            bad.push(format!("a circle across the rooms {rooms:?}"));
        }
    }
    assert!(bad.is_empty(), "upward imports:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_sees_imports() {
    let f = File {
        module: vec!["core".into(), "coll".into()],
        path: PathBuf::from("core/coll.rs"),
        text: "use crate::{api::sync::{self, X}, ffi};\n// crate::proxy in prose\nfn f() { super::net::go(\"crate::heap\"); }".into(),
    };
    let got = names(&f, &BTreeSet::new());
    let has = |p: &[&str]| got.iter().any(|g| g.iter().map(String::as_str).eq(p.iter().copied()));
    assert!(has(&["api", "sync", "self"]), "{got:?}");
    assert!(has(&["api", "sync", "X"]), "{got:?}");
    assert!(has(&["ffi"]), "{got:?}");
    assert!(has(&["core", "net", "go"]), "{got:?}");
    assert!(!got.iter().any(|g| g[0] == "proxy" || g[0] == "heap"), "{got:?}");
    assert_eq!(floor(&["api".into()]), Some(8));
}
