//! Reserving tmpfs space for the parts of the host heap that are in use (issue 27, item 5).
//!
//! A heap file is sparse: its pages are allocated when first touched. On a full tmpfs (a
//! container's 64 MiB `/dev/shm`) the first store to a page that cannot be allocated kills
//! the process with SIGBUS, far from the cause and with no message. So every range the
//! library hands out (the team areas at init, each block at `ishmem_malloc`, `calloc`,
//! `align`) is first reserved with `fallocate` in the PE's own heap file: where the space is
//! missing the call fails at once with an error naming the directory and the variables to
//! change. Reserved pages stay with the file until the job ends (a freed block's pages are
//! reused by later blocks; they are not handed back to the tmpfs). Files of other backends
//! (the GPU heap) need nothing: the fd is then never set.

use std::sync::atomic::{AtomicI32, Ordering::*};
use std::sync::OnceLock;

/// This PE's heap file (-1: none), kept open after its name is unlinked.
static FD: AtomicI32 = AtomicI32::new(-1);
/// The directory the file was made in (`ISHMEM_SHM_DIR`).
static DIR: OnceLock<String> = OnceLock::new();

/// Keeps `fd` (this PE's heap file, made in `dir`) for the reservations; owns it from now on.
pub fn keep(fd: i32, dir: &str) {
    let _ = DIR.set(dir.to_string());
    let old = FD.swap(fd, AcqRel);
    if old >= 0 {
        // SAFETY: a descriptor this module owned.
        unsafe { libc::close(old) };
    }
}

/// Closes the heap file (finalize: nothing is handed out any more; the mappings keep it).
pub fn close() {
    let fd = FD.swap(-1, AcqRel);
    if fd >= 0 {
        // SAFETY: a descriptor this module owned.
        unsafe { libc::close(fd) };
    }
}

/// Allocates the file's pages for `len` bytes at offset `off` in descriptor `fd`. Filesystems
/// without `fallocate` (EOPNOTSUPP) are not reserved in: nothing can be checked there.
pub fn fallocate(fd: i32, off: usize, len: usize) -> Result<(), std::io::Error> {
    if len == 0 {
        return Ok(());
    }
    loop {
        // SAFETY: fallocate takes a descriptor and a range; mode 0 allocates and extends.
        let r = unsafe { libc::fallocate(fd, 0, off as libc::off_t, len as libc::off_t) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EOPNOTSUPP) => return Ok(()),
            _ => return Err(e),
        }
    }
}

/// What to say when `len` bytes cannot be had in `dir`.
pub fn advice(what: &str, len: usize, dir: &str, e: &std::io::Error) -> String {
    format!(
        "cannot reserve {len} bytes for {what} in {dir} (ISHMEM_SHM_DIR): {e}; the file system there (a tmpfs) is too small \
         for this job's shared memory: make it larger (docker run --shm-size=..., or mount -o remount,size=... {dir}), set \
         ISHMEM_SHM_DIR to a directory on a larger tmpfs, or use less symmetric memory"
    )
}

/// Reserves bytes `[off, off + len)` of this PE's heap file; Ok where there is no file (GPU
/// heap) or nothing to reserve.
pub fn reserve(what: &str, off: usize, len: usize) -> Result<(), String> {
    let fd = FD.load(Acquire);
    if fd < 0 {
        return Ok(());
    }
    fallocate(fd, off, len).map_err(|e| advice(what, len, DIR.get().map_or("?", String::as_str), &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_names_the_directory_and_the_variable() {
        let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let m = advice("a block of the symmetric heap", 4096, "/dev/shm", &e);
        assert!(m.contains("in /dev/shm (ISHMEM_SHM_DIR)"), "{m}");
        assert!(m.contains("No space left on device"), "{m}");
        assert!(m.contains("--shm-size"), "{m}");
    }

    #[test]
    fn reserve_allocates_pages_of_a_sparse_file() {
        let path = format!("/dev/shm/ishmem-reserve-test-{}", std::process::id());
        let c = std::ffi::CString::new(path.clone()).unwrap();
        // SAFETY: c is a valid path.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600) };
        assert!(fd >= 0);
        // SAFETY: unlink a path we made; ftruncate an fd we own.
        unsafe {
            libc::unlink(c.as_ptr());
            assert_eq!(libc::ftruncate(fd, 1 << 20), 0);
        }
        // SAFETY: st is written by fstat.
        let blocks = |fd| unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            libc::fstat(fd, &mut st);
            st.st_blocks
        };
        assert_eq!(blocks(fd), 0);
        fallocate(fd, 4096, 65536).unwrap();
        assert!(blocks(fd) >= 65536 / 512, "{}", blocks(fd));
        // SAFETY: our descriptor.
        unsafe { libc::close(fd) };
    }
}
