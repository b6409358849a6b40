//! What `ishmem-info` and `ISHMEM_INFO=1` print: the release, the API version, the backends
//! this process finds, the running job and every ISHMEM_* variable.

use super::State;
use std::ffi::c_int;

/// The Intel SHMEM API version implemented (`ishmem_info_get_version`).
pub const MAJOR: c_int = 1;
pub const MINOR: c_int = 5;

/// The library's release (Cargo.toml) and the Intel SHMEM API version it implements, one line:
/// `ishmem 0.1.0 (Intel SHMEM API 1.5)` (what `ishmem-info --version` prints).
pub fn version_line() -> String {
    format!("ishmem {} (Intel SHMEM API {MAJOR}.{MINOR})", env!("CARGO_PKG_VERSION"))
}

/// One calm line on the CUDA driver as this process finds it, for `ishmem-info`.
fn cuda_line() -> String {
    if !crate::transport::cuda::driver::loadable() {
        return "CUDA: no driver; CPU backend".into();
    }
    match crate::transport::cuda::driver::probe() {
        Ok(n) => format!("CUDA: {n} device(s) visible; GPU backend (ISHMEM_GPU=0 keeps the CPU backend)"),
        Err(e) => format!("CUDA: driver loaded, but not usable ({e}); CPU backend"),
    }
}

/// The report of `ishmem-info` and `ISHMEM_INFO=1`: version, backend, job, and each variable
/// with its value here and its default, in aligned columns.
pub fn info_text(st: Option<&State>) -> String {
    let mut s = format!("{}: a Rust implementation, as a C library\n", version_line());
    s.push_str("backends built in: cpu (node-local shared memory), cuda (driver loaded at run time)\n");
    if st.is_none() {
        s.push_str(&cuda_line());
        s.push('\n');
        s.push_str(&match crate::transport::fabric::usable_providers() {
            Ok(((ma, mi), p)) if p.is_empty() => {
                format!("network: libfabric {ma}.{mi}, no provider with FI_EP_RDM+FI_RMA+FI_ATOMIC (jobs of one node only)\n")
            }
            Ok(((ma, mi), p)) => format!(
                "network: libfabric {ma}.{mi}; providers with FI_EP_RDM+FI_RMA+FI_ATOMIC (the first is the default): {}\n",
                p.join(", ")
            ),
            Err(e) => format!("network: {e} (jobs of one node only)\n"),
        });
    }
    if let Some(st) = st {
        let backend = match &st.gpu {
            Some(g) => format!("cuda (device {}: {}, bus {})", g.ordinal, g.name, g.bus_id),
            None => "cpu".to_string(),
        };
        s.push_str(&format!(
            "backend in use: {backend}; bootstrap: {}; PEs: {}; symmetric heap: {} bytes per PE; symmetric globals: {}\n",
            st.runtime.name(),
            st.npes,
            st.heap.len,
            st.data.as_ref().map_or("off".to_string(), |d| format!("{} bytes", d.len))
        ));
        s.push_str(&format!("nodes: {}\n", st.nodes.describe()));
        let (host_pes, cpus) = (st.nodes.host_size.get(st.me).copied().unwrap_or(0), super::usable_cpus());
        if crate::wait::blocking() {
            s.push_str(&format!(
                "waits: block, no spinning or yielding: sleep {}-{} us{} ({host_pes} PEs of the job on this machine, {cpus} usable CPUs: \
                 oversubscribed more than {}x)\n",
                crate::wait::BLOCK_NAP_MIN.as_micros(),
                (crate::wait::BLOCK_NAP_MAX.as_micros() as u64).max(st.cfg.wait_sleep_max_us),
                if st.net.as_ref().is_some_and(|n| n.stage.is_none() && n.fab.has_wait_fd()) {
                    " in poll on the network's wait fd"
                } else {
                    ""
                },
                crate::wait::BLOCK_OVERSUBSCRIBED
            ));
        } else {
            s.push_str(&format!(
                "waits: spin {} polls before yielding ({host_pes} PEs of the job on this machine, {cpus} usable CPUs{})\n",
                st.cfg.wait_spin,
                if cpus > 0 && host_pes > cpus { ": oversubscribed" } else { "" }
            ));
        }
        if let Some(n) = &st.net {
            s.push_str(&format!("network: {}\n", n.fab.info()));
            s.push_str(&format!("network AMOs: {}\n", n.amo_paths()));
            s.push_str(if n.node_amos_local() {
                "AMOs to PEs of this node: CPU atomics on their mapped memory (the provider applies AMOs with the target CPU's atomics)\n"
            } else {
                "AMOs to PEs of this node: through the provider (its atomics may not be atomic with the CPU's)\n"
            });
            s.push_str(&format!("network heap access: {}\n", n.heap_path()));
            s.push_str(&match st.bcast_rings {
                Some(r) => format!(
                    "collectives across nodes: {} team slots with a block of {} KiB (broadcast ring {} KiB, all-send scratch {} KiB: slots of scratch / (2 * team PEs))\n",
                    r.teams,
                    r.block() / 1024,
                    super::team::NET_RING_BYTES / 1024,
                    r.scratch / 1024
                ),
                None => "collectives across nodes: no blocks of their own (GPU heap, or a heap below 16 times their smallest total): the team areas' scratch\n".into(),
            });
        }
        s.push_str(&footprint_line(st));
    }
    s.push_str("environment variables:\n");
    let rows: Vec<[String; 3]> = crate::env::VARS
        .iter()
        .map(|v| [v.name.to_string(), std::env::var(v.name).unwrap_or_else(|_| "(unset)".into()), v.default.to_string()])
        .collect();
    s.push_str(&columns(&["variable", "value", "default"], &rows));
    s
}

/// This PE's per-job state that grows with the job, one line of `key=value` pairs (read by
/// scripts/scale-check.sh for docs/SCALING.md): bytes and regions registered with the provider,
/// address vector entries and the length of one endpoint name, the key table entries (regions x
/// PEs), the team areas' bytes in the heap and the liveness connections.
fn footprint_line(st: &State) -> String {
    let (regions, bytes, av, keys, name) = match &st.net {
        Some(n) => {
            let (r, b, a, k) = n.fab.footprint();
            (r, b, a, k, n.fab.name().map_or(0, |v| v.len()))
        }
        None => (0, 0, 0, 0, 0),
    };
    let areas = st.cfg.teams_max * super::team::AREA_BYTES
        + if st.net.is_some() { super::team::AREA_BYTES } else { 0 }
        + st.bcast_rings.map_or(0, |r| r.teams * r.block());
    format!(
        "footprint: registered_bytes={bytes} registered_regions={regions} av_entries={av} av_name_bytes={name} key_entries={keys} \
         team_area_bytes={areas} live_conns={}\n",
        super::live::connections()
    )
}

/// Rows under a header, each column as wide as its widest cell, indented by two spaces.
fn columns(header: &[&str; 3], rows: &[[String; 3]]) -> String {
    let mut w = header.map(str::len);
    for r in rows {
        for (wi, c) in w.iter_mut().zip(r) {
            *wi = (*wi).max(c.chars().count());
        }
    }
    let line = |c: [&str; 3]| format!("  {:<w0$}  {:<w1$}  {}\n", c[0], c[1], c[2], w0 = w[0], w1 = w[1]);
    let mut s = line(*header);
    for r in rows {
        s.push_str(&line([&r[0], &r[1], &r[2]]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_line_names_release_and_api() {
        assert_eq!(version_line(), format!("ishmem {} (Intel SHMEM API 1.5)", env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn columns_are_aligned() {
        let rows = [
            ["ISHMEM_QUEUE_REDUCE_SPLIT_MIN".to_string(), "(unset)".to_string(), "256K".to_string()],
            ["ISHMEM_GPU".to_string(), "a-much-longer-value".to_string(), "auto".to_string()],
        ];
        let text = columns(&["variable", "value", "default"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].find("value"), lines[1].find("(unset)"));
        assert_eq!(lines[1].find("(unset)"), lines[2].find("a-much"));
        assert_eq!(lines[0].find("default"), lines[1].find("256K"));
        assert_eq!(lines[1].find("256K"), lines[2].find("auto"));
    }
}
