//! Memory registration keys: what a peer must present to read or write a registered region.
//! Where the provider lets us choose keys (no FI_MR_PROV_KEY), each registration gets a fresh
//! random key from the kernel (getrandom, else /dev/urandom), as wide as the provider's
//! `mr_key_size` allows (64 bits on tcp;ofi_rxm and sockets); the keys reach the job's PEs only
//! through the launcher's exchange. A key that cannot be made random is an error, never a
//! guessable fallback. See docs/SECURITY.md, "Network endpoints and memory keys".

use std::io::Read;

/// The key width in bytes to use for a provider's `mr_key_size` (0 or more than 8: 8).
pub(super) fn width(mr_key_size: usize) -> usize {
    if mr_key_size == 0 || mr_key_size > 8 {
        8
    } else {
        mr_key_size
    }
}

/// Fills `buf` from the kernel's random source.
fn fill(buf: &mut [u8]) -> Result<(), String> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: rest is writable for its length.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            done += n as usize;
            continue;
        }
        let e = std::io::Error::last_os_error();
        if n < 0 && e.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        // No getrandom (an old kernel or a seccomp filter): /dev/urandom.
        return std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(rest))
            .map_err(|u| format!("no random memory keys: getrandom failed ({e}) and /dev/urandom too ({u})"));
    }
    Ok(())
}

/// A random key of `width` bytes (1 to 8), never 0.
pub(crate) fn random(width: usize) -> Result<u64, String> {
    let width = width.clamp(1, 8);
    loop {
        let mut b = [0u8; 8];
        fill(&mut b[..width])?;
        let k = u64::from_le_bytes(b);
        if k != 0 {
            return Ok(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_and_fit_the_width() {
        let k: Vec<u64> = (0..64).map(|_| random(8).unwrap()).collect();
        let mut d = k.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), k.len(), "repeated keys: {k:x?}");
        // 64 random 64-bit keys: all below 2^40 has probability 2^-1536
        assert!(k.iter().any(|&x| x >> 40 != 0), "{k:x?}");
        for w in 1..8 {
            for _ in 0..32 {
                let x = random(w).unwrap();
                assert!(x != 0 && x >> (8 * w) == 0, "width {w}: {x:#x}");
            }
        }
        assert_eq!(width(0), 8);
        assert_eq!(width(4), 4);
        assert_eq!(width(16), 8);
    }
}
