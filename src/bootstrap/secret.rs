//! The node's secret and the public names made from it (issue 30, items 1 and 3).
//!
//! The PEs of a node share a secret that only they and their launcher know: ishmrun's job id
//! (its environment, readable only by the job's user), else a random value of the node's lowest
//! PE spread through the launcher's exchange, else (a PE alone) a random value of its own. Every
//! name that other local users can see (the files in `ISHMEM_SHM_DIR`) is a one-way hash of it:
//! seeing a name tells nothing of the secret, of the job's other names, or of the unique id's
//! key; and a name cannot be guessed before the job makes it.
//!
//! Owns: SHA-256 (no crate is needed for 60 lines), the name derivation, and the shared-memory
//! directory check. Knows nothing of the transports' file layout beyond the `what` strings.

use std::os::unix::fs::MetadataExt;

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
    0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
    0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
    0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
    0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256 of `data` (FIPS 180-4).
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64).wrapping_mul(8)).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for (i, c) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7].wrapping_add(s1).wrapping_add(ch).wrapping_add(K[i]).wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), v[0], v[1], v[2], v[3].wrapping_add(t1), v[4], v[5], v[6]];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (o, x) in out.chunks_mut(4).zip(h) {
        o.copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// The first `n` hex digits of SHA-256 of the parts, each ended by a NUL (so that the parts
/// cannot run into each other).
pub fn derive_hex(parts: &[&[u8]], n: usize) -> String {
    let mut m = Vec::new();
    for p in parts {
        m.extend_from_slice(p);
        m.push(0);
    }
    sha256(&m).iter().map(|b| format!("{b:02x}")).collect::<String>()[..n.min(64)].to_string()
}

/// The public part that every file name of one job shares (`ishmem-<prefix>-...`), so that
/// ishmrun can find what a crashed job left: 16 hex digits, one-way from the secret.
pub fn job_prefix(secret: &str) -> String {
    format!("ishmem-{}-", derive_hex(&[b"ishmem job", secret.as_bytes()], 16))
}

/// The names of one node's files (`ISHMEM_SHM_DIR`): `ishmem-<job>-<file>`, where `<file>`
/// (32 hex digits) is one-way from the secret, the node and the file's role, so that one name
/// seen in the directory gives no other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShmNames {
    pub dir: String,
    secret: String,
    node: usize,
}

impl ShmNames {
    pub fn new(dir: &str, secret: &str, node: usize) -> ShmNames {
        ShmNames { dir: dir.to_string(), secret: secret.to_string(), node }
    }

    /// The path of the file `what` (`ctl`, `heap-3`, `data-3`).
    pub fn path(&self, what: &str) -> String {
        let f = derive_hex(&[b"ishmem file", self.secret.as_bytes(), self.node.to_string().as_bytes(), what.as_bytes()], 32);
        format!("{}/{}{f}", self.dir, job_prefix(&self.secret))
    }
}

/// Checks `ISHMEM_SHM_DIR` before any file is made in it: a directory (not a symbolic link),
/// owned by this user or root, writable by others only with the sticky bit (so that nobody
/// else can remove or rename the job's files), and on tmpfs (or hugetlbfs), whose files live in
/// memory (a disk file system would write the heaps out). Returns the reason it is refused.
pub fn check_shm_dir(dir: &str) -> Result<(), String> {
    let var = "ISHMEM_SHM_DIR";
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{var}={dir}: {e}"))?;
    if m.file_type().is_symlink() {
        // /dev/shm is a link on some systems: what it points to is checked, and must pass.
        let target = std::fs::canonicalize(dir).map_err(|e| format!("{var}={dir}: {e}"))?;
        return check_shm_dir(&target.to_string_lossy()).map_err(|e| format!("{e} (through the link {dir})"));
    }
    if !m.is_dir() {
        return Err(format!("{var}={dir} is not a directory"));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if m.uid() != me && m.uid() != 0 {
        return Err(format!(
            "{var}={dir} is owned by uid {}, neither this user (uid {me}) nor root: its owner could read and change the job's memory",
            m.uid()
        ));
    }
    let mode = m.mode() & 0o7777;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(format!(
            "{var}={dir} has mode {mode:04o}: writable by other users without the sticky bit, they could remove or replace the job's files (use mode 1777, as /dev/shm, or 0700)"
        ));
    }
    let c = std::ffi::CString::new(dir).map_err(|_| format!("{var}={dir:?} contains a NUL byte"))?;
    // SAFETY: plain data written by statfs.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid path and s is writable.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return Err(format!("{var}={dir}: statfs: {}", std::io::Error::last_os_error()));
    }
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;
    let fs = s.f_type as i64;
    if fs != TMPFS_MAGIC && fs != HUGETLBFS_MAGIC {
        return Err(format!(
            "{var}={dir} is not on tmpfs (file system type {fs:#x}): the heaps would be written to a disk; use /dev/shm or another tmpfs"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha256_known_answers() {
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            hex(&sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(hex(&sha256(&[b'a'; 1000])), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
    }

    #[test]
    fn names_are_one_way_and_distinct() {
        let n = ShmNames::new("/dev/shm", "0123456789abcdef0123456789abcdef", 0);
        let ctl = n.path("ctl");
        let prefix = format!("/dev/shm/{}", job_prefix("0123456789abcdef0123456789abcdef"));
        assert!(ctl.starts_with(&prefix), "{ctl}");
        assert!(!ctl.contains("0123456789abcdef"));
        assert_eq!(ctl.len(), prefix.len() + 32);
        assert_ne!(ctl, n.path("heap-0"));
        assert_ne!(n.path("heap-0"), n.path("heap-1"));
        assert_ne!(ctl, ShmNames::new("/dev/shm", "0123456789abcdef0123456789abcdef", 1).path("ctl"));
        assert_ne!(ctl, ShmNames::new("/dev/shm", "0123456789abcdef0123456789abcdee", 0).path("ctl"));
        assert_eq!(ctl, n.clone().path("ctl"));
    }

    #[test]
    fn shm_dir_checks() {
        assert!(check_shm_dir("/dev/shm").is_ok(), "{:?}", check_shm_dir("/dev/shm"));
        assert!(check_shm_dir("/nonexistent-ishmem").unwrap_err().contains("ISHMEM_SHM_DIR=/nonexistent-ishmem"));
        assert!(check_shm_dir("/proc/self/status").is_err());
    }
}
