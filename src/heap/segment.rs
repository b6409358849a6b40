//! Shared-memory segments of the CPU backend: files in a tmpfs directory that every PE of the
//! node maps. Owns creating, mapping and unlinking them, and moving the executable's data
//! segment (its global and static variables) into one, so that they become symmetric.
//! It knows nothing of PEs or the job: callers pass paths and sizes.

use std::ffi::CString;
use std::io::Error;

fn cpath(path: &str) -> Result<CString, String> {
    CString::new(path).map_err(|_| format!("path {path:?} contains a NUL byte"))
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Rounds down to a page boundary.
pub fn page_floor(x: usize) -> usize {
    x & !(page_size() - 1)
}

/// Rounds up to a page boundary.
pub fn page_ceil(x: usize) -> usize {
    let p = page_size();
    (x + p - 1) & !(p - 1)
}

/// An open file descriptor, closed on drop.
#[derive(Debug)]
pub struct Fd(pub i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor.
        unsafe { libc::close(self.0) };
    }
}

/// Creates a new shared file (never one that exists: `O_EXCL`, which also refuses a symbolic
/// link planted under the name), mode 0600, and sets its length.
pub fn create(path: &str, len: usize) -> Result<Fd, String> {
    create_or_open(path, len, false).map(|(fd, _)| fd)
}

/// Creates the shared file `path` (`O_EXCL|O_NOFOLLOW`, mode 0600) or, with `join` and when it
/// exists, opens it with `open_checked`'s checks; sets its length to `len` (a file that exists
/// must be empty or of that length). Returns the descriptor and whether this call created it.
pub fn create_or_open(path: &str, len: usize, join: bool) -> Result<(Fd, bool), String> {
    let c = cpath(path)?;
    #[cfg(not(ishmem_mutation = "shm_checks_off"))]
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // The mutant (issue 30's checks removed): opens whatever is under the name, links followed.
    #[cfg(ishmem_mutation = "shm_checks_off")]
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC;
    // SAFETY: c is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags, 0o600 as libc::c_uint) };
    let (fd, made) = if fd >= 0 {
        (Fd(fd), true)
    } else {
        let e = Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(format!("cannot create {path}: {e}"));
        }
        if !join {
            return Err(format!(
                "cannot create {path}: the name exists already ({}); another user may have made it to read or \
                 corrupt the job: ending the job",
                describe(path)
            ));
        }
        (open_checked(path, 0)?, false)
    };
    // SAFETY: st is plain data written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and st is writable.
    if unsafe { libc::fstat(fd.0, &mut st) } != 0 {
        return Err(format!("cannot stat {path}: {}", Error::last_os_error()));
    }
    if st.st_size as usize == len {
        return Ok((fd, made));
    }
    if st.st_size != 0 {
        return Err(format!("{path} holds {} bytes, not the {len} this job needs", st.st_size));
    }
    // SAFETY: fd is open for writing.
    if unsafe { libc::ftruncate(fd.0, len as libc::off_t) } != 0 {
        return Err(format!("cannot size {path} to {len} bytes: {}", Error::last_os_error()));
    }
    Ok((fd, made))
}

/// What is under `path`, for messages: its type, owner and mode, without following a link.
fn describe(path: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => format!(
            "a symbolic link to {:?}, owned by uid {}",
            std::fs::read_link(path).map(|p| p.display().to_string()).unwrap_or_default(),
            m.uid()
        ),
        Ok(m) => format!("owned by uid {}, mode {:04o}, {} link(s)", m.uid(), m.mode() & 0o7777, m.nlink()),
        Err(e) => e.to_string(),
    }
}

/// Opens an existing shared file of this job and checks that it is one: not a symbolic link
/// (`O_NOFOLLOW`), a regular file owned by this user, of mode 0600 (readable and writable by
/// nobody else), with one link (not a hard link to some other file of this user), holding at
/// least `len` bytes. Anything else ends the job with a message saying what was found.
pub fn open_checked(path: &str, len: usize) -> Result<Fd, String> {
    let c = cpath(path)?;
    #[cfg(not(ishmem_mutation = "shm_checks_off"))]
    let nofollow = libc::O_NOFOLLOW;
    #[cfg(ishmem_mutation = "shm_checks_off")]
    let nofollow = 0;
    // SAFETY: c is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | nofollow | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = Error::last_os_error();
        if e.raw_os_error() == Some(libc::ELOOP) {
            return Err(format!("{path} is {}, not a file of this job; another user may have planted it: ending the job", describe(path)));
        }
        return Err(format!("cannot open {path}: {e}"));
    }
    let fd = Fd(fd);
    // SAFETY: st is plain data written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open and st is writable.
    if unsafe { libc::fstat(fd.0, &mut st) } != 0 {
        return Err(format!("cannot stat {path}: {}", Error::last_os_error()));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mode = st.st_mode & 0o7777;
    let foreign = st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_uid != me || mode != 0o600 || st.st_nlink != 1;
    if foreign && cfg!(not(ishmem_mutation = "shm_checks_off")) {
        return Err(format!(
            "{path} is not a file of this job (owned by uid {}, mode {mode:04o}, {} link(s), {}; this job's are \
             regular files of uid {me}, mode 0600, 1 link): another user may have made it to read or corrupt the job; ending the job",
            st.st_uid,
            st.st_nlink,
            if st.st_mode & libc::S_IFMT == libc::S_IFREG { "a regular file" } else { "not a regular file" }
        ));
    }
    if (st.st_size as usize) < len {
        return Err(format!("{path} is shorter than the expected {len} bytes"));
    }
    Ok(fd)
}

/// Maps `len` bytes of a shared file read-write; `at` asks for that exact address
/// (replacing what is there). Returns the address.
pub fn map(fd: &Fd, len: usize, at: Option<usize>) -> Result<usize, String> {
    let mut flags = libc::MAP_SHARED | libc::MAP_NORESERVE;
    if at.is_some() {
        flags |= libc::MAP_FIXED;
    }
    let hint = at.unwrap_or(0) as *mut libc::c_void;
    // SAFETY: mapping a file we hold open; with MAP_FIXED the caller guarantees the range is
    // one it owns and whose contents it has copied into the file.
    let p = unsafe { libc::mmap(hint, len, libc::PROT_READ | libc::PROT_WRITE, flags, fd.0, 0) };
    if p == libc::MAP_FAILED {
        return Err(format!("cannot map {len} bytes: {}", Error::last_os_error()));
    }
    Ok(p as usize)
}

/// Maps `len` bytes of a shared file read-write at an address that is a multiple of `align`
/// (a power of two, at least a page): reserves `len + align` bytes of address space, maps the
/// file over the aligned part and gives the rest back.
pub fn map_aligned(fd: &Fd, len: usize, align: usize) -> Result<usize, String> {
    debug_assert!(align.is_power_of_two());
    let len_pages = page_ceil(len);
    let span = len_pages + align;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    // SAFETY: an anonymous PROT_NONE reservation anywhere; nothing is overwritten.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), span, libc::PROT_NONE, flags, -1, 0) };
    if p == libc::MAP_FAILED {
        return Err(format!("cannot reserve {span} bytes of address space: {}", Error::last_os_error()));
    }
    let lo = p as usize;
    let at = (lo + align - 1) & !(align - 1);
    // MAP_FIXED over our own reservation.
    let mapped = map(fd, len, Some(at));
    // SAFETY: the head [lo, at) and the tail [at+len_pages, lo+span) belong to the reservation
    // made above and hold nothing; on failure the whole reservation goes back.
    unsafe {
        if mapped.is_err() {
            libc::munmap(p, span);
        } else {
            if at > lo {
                libc::munmap(p, at - lo);
            }
            let end = at + len_pages;
            if lo + span > end {
                libc::munmap(end as *mut libc::c_void, lo + span - end);
            }
        }
    }
    mapped
}

/// Unlinks a file, ignoring a file that is already gone.
pub fn unlink(path: &str) {
    if let Ok(c) = cpath(path) {
        // SAFETY: c is a valid path.
        unsafe { libc::unlink(c.as_ptr()) };
    }
}

/// Bytes free in the filesystem holding `dir`, if it can be asked.
pub fn free_bytes(dir: &str) -> Option<u64> {
    let c = cpath(dir).ok()?;
    // SAFETY: plain data written by statvfs.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid path and s is writable.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64)
}

/// The writable, page-aligned part of the main executable's data (`.data`, `.bss`), after its
/// RELRO pages: `(start, len)`, or `None` when it has none.
pub fn main_data_segment() -> Option<(usize, usize)> {
    #[derive(Default)]
    struct Found {
        rw: Vec<(usize, usize)>,
        relro: Option<(usize, usize)>,
        done: bool,
    }
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut libc::c_void) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes our `Found` and a valid info record.
        let (found, info) = unsafe { (&mut *(data as *mut Found), &*info) };
        if found.done {
            return 1;
        }
        found.done = true; // the first object is the main program
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
            let end = start + ph.p_memsz as usize;
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
                found.rw.push((start, end));
            } else if ph.p_type == libc::PT_GNU_RELRO {
                found.relro = Some((start, end));
            }
        }
        1
    }
    let mut found = Found::default();
    // SAFETY: the callback only reads the records and writes `found`.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut Found as *mut libc::c_void) };
    // GNU ld puts RELRO at the start of the one writable segment; lld gives RELRO a writable
    // segment of its own. Either way: the writable pages past RELRO, the largest such range.
    found
        .rw
        .iter()
        .filter_map(|&(lo, hi)| {
            let mut start = page_floor(lo);
            if let Some((rlo, rhi)) = found.relro {
                if rlo < hi && rhi > start {
                    start = start.max(page_ceil(rhi.min(hi)));
                }
            }
            let end = page_ceil(hi);
            (end > start).then(|| (start, end - start))
        })
        .max_by_key(|&(_, len)| len)
}

/// The loader's lazily bound part of the main executable's writable data: its `.got.plt`
/// (`DT_PLTGOT`, 3 reserved entries and one per `DT_PLTRELSZ` relocation), which holds the
/// addresses of library functions that the dynamic loader writes; `None` when the executable
/// has no PLT. With GNU ld and gold it ends exactly at `__data_start`, where the program's own
/// data begin; under full RELRO (`-z now`) it lies in the read-only RELRO pages.
pub fn main_loader_data() -> Option<(usize, usize)> {
    #[derive(Default)]
    struct Found {
        base: usize,
        dynamic: Option<usize>,
        loads: Vec<(usize, usize)>,
        done: bool,
    }
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut libc::c_void) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes our `Found` and a valid info record.
        let (found, info) = unsafe { (&mut *(data as *mut Found), &*info) };
        if found.done {
            return 1;
        }
        found.done = true; // the first object is the main program
        found.base = info.dlpi_addr as usize;
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            let start = info.dlpi_addr as usize + ph.p_vaddr as usize;
            if ph.p_type == libc::PT_DYNAMIC {
                found.dynamic = Some(start);
            } else if ph.p_type == libc::PT_LOAD {
                found.loads.push((start, start + ph.p_memsz as usize));
            }
        }
        1
    }
    let mut found = Found::default();
    // SAFETY: the callback only reads the records and writes `found`.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut Found as *mut libc::c_void) };
    let dynamic = found.dynamic?;
    const DT_NULL: usize = 0;
    const DT_PLTRELSZ: usize = 2;
    const DT_PLTGOT: usize = 3;
    const DT_REL: usize = 17;
    const DT_PLTREL: usize = 20;
    let (mut pltgot, mut relsz, mut rel) = (None, 0usize, 0usize);
    // The dynamic section is an array of (tag, value) pairs of the word size, ended by DT_NULL.
    for i in 0..4096 {
        // SAFETY: PT_DYNAMIC of the loaded main program is mapped and readable, and its array
        // ends with DT_NULL (the bound of 4096 entries only guards against a malformed one).
        let (tag, val) = unsafe {
            let e = (dynamic as *const usize).add(2 * i);
            (e.read(), e.add(1).read())
        };
        match tag {
            DT_NULL => break,
            DT_PLTGOT => pltgot = Some(val),
            DT_PLTRELSZ => relsz = val,
            DT_PLTREL => rel = val,
            _ => {}
        }
    }
    let v = pltgot?;
    // glibc relocates some entries of the dynamic section in place, others not: the address is
    // the one of the two that lies in the executable's mapping.
    let inside = |a: usize| found.loads.iter().any(|&(lo, hi)| a >= lo && a < hi);
    let start = if inside(v) { v } else { v.wrapping_add(found.base) };
    if !inside(start) {
        return None;
    }
    let word = std::mem::size_of::<usize>();
    let rel_size = if rel == DT_REL { 2 * word } else { 3 * word };
    Some((start, (3 + relsz / rel_size) * word))
}

/// The part of the data segment `[start, start+len)` that the network may reach: all of it
/// but the loader's `loader` range (`.got.plt`, see [`main_loader_data`]). Where that range
/// lies inside, the larger side of it (GNU ld and gold put it first: the part from
/// `__data_start` on).
pub fn own_part(start: usize, len: usize, loader: Option<(usize, usize)>) -> (usize, usize) {
    let end = start + len;
    let Some((l0, llen)) = loader else { return (start, len) };
    let l1 = l0 + llen;
    if l1 <= start || l0 >= end {
        return (start, len);
    }
    let below = l0.saturating_sub(start);
    let above = end.saturating_sub(l1);
    if above >= below {
        (l1.max(start), above)
    } else {
        (start, below)
    }
}

/// The range being moved by `share_in_place` (start, end) and the moving thread, for the fault
/// handler.
static MOVE_START: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static MOVE_END: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static MOVE_TID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
static MOVING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The SIGSEGV action in place before the move (restored after it; read by the handler).
static OLD_SEGV_RAW: std::sync::atomic::AtomicPtr<libc::sigaction> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// SIGSEGV while the range is read-only: a store of another thread into it waits until the
/// shared copy is mapped, then returns, and the store runs again, into the new mapping. Any
/// other fault puts the previous action back and returns, so that it happens again under it.
extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    use std::sync::atomic::Ordering::Acquire;
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    if MOVING.load(Acquire) && addr >= MOVE_START.load(Acquire) && addr < MOVE_END.load(Acquire) && tid != MOVE_TID.load(Acquire) {
        while MOVING.load(Acquire) {
            // SAFETY: sched_yield is async-signal-safe.
            unsafe { libc::sched_yield() };
        }
        return;
    }
    let old = OLD_SEGV_RAW.load(Acquire);
    if !old.is_null() {
        // SAFETY: old points to the saved action (kept for the life of the process).
        unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
    }
}

/// Moves `[start, start+len)` of this process (page-aligned, read-write) into the shared file
/// at `path`: copies the bytes into it and maps it over the same addresses.
///
/// Other threads of the program may be running and storing into the range (their globals):
/// a store between the copy and the mapping would be lost (issue 27, tests/c/globals_race.c
/// lost millions of a thread's increments). So the range is made read-only first; a store of
/// another thread then faults, and a SIGSEGV handler installed for the move (the program's own
/// action is restored after it) holds that thread until the copy is mapped, then lets the store
/// run again into it. This thread's signals are blocked meanwhile (its handlers could store
/// into the range). What it cannot cover: the kernel writing into the range for another thread
/// during the move (a `read` into a global buffer) fails with EFAULT instead of a fault.
pub fn share_in_place(path: &str, start: usize, len: usize) -> Result<Fd, String> {
    use std::sync::atomic::Ordering::Release;
    let fd = create(path, len)?;
    // SAFETY: set is plain data filled by sigfillset; pthread_sigmask changes this thread only.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old_mask: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: all and old_mask are writable sigsets.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old_mask);
    }
    // SAFETY: gettid has no preconditions.
    MOVE_TID.store(unsafe { libc::syscall(libc::SYS_gettid) } as i32, Release);
    MOVE_START.store(start, Release);
    MOVE_END.store(start + len, Release);
    // SAFETY: a sigaction is plain data.
    let mut old_act: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: act is plain data; the handler is a valid SA_SIGINFO handler; old is writable.
    let installed = unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_fault as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGSEGV, &act, &mut old_act) == 0
    };
    if installed {
        // (A leaked copy: the handler reads it without a lock.)
        OLD_SEGV_RAW.store(Box::leak(Box::new(old_act)), Release);
    }
    MOVING.store(true, Release);
    // SAFETY: [start, start+len) is a page-aligned mapping of this process.
    let protected = installed && unsafe { libc::mprotect(start as *mut libc::c_void, len, libc::PROT_READ) } == 0;
    let r = copy_and_map(&fd, path, start, len);
    if r.is_err() && protected {
        // SAFETY: as above: the range is writable again (the copy was not mapped).
        unsafe { libc::mprotect(start as *mut libc::c_void, len, libc::PROT_READ | libc::PROT_WRITE) };
    }
    MOVING.store(false, Release);
    if installed {
        // SAFETY: old_act is the action saved above.
        unsafe { libc::sigaction(libc::SIGSEGV, &old_act, std::ptr::null_mut()) };
    }
    // SAFETY: old_mask is the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old_mask, std::ptr::null_mut()) };
    r.map(|_| fd)
}

/// The copy of `share_in_place` and the mapping over the range.
fn copy_and_map(fd: &Fd, path: &str, start: usize, len: usize) -> Result<(), String> {
    // The kernel copies the pages into the file (pwrite64 as a raw system call): the range is
    // whole pages of the executable, which under AddressSanitizer hold the poisoned red zones
    // between globals; a copy in user space (memcpy) would be reported, a raw system call is
    // not intercepted (docs/RELIABILITY.md, sanitizers).
    let mut done = 0usize;
    while done < len {
        // SAFETY: [start+done, start+len) is mapped and readable (the caller's range); fd is
        // open for writing and sized to len.
        let n = unsafe { libc::syscall(libc::SYS_pwrite64, fd.0, (start + done) as *const libc::c_void, len - done, done as libc::off_t) };
        if n < 0 {
            let e = Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("cannot copy {len} bytes into {path}: {e}"));
        }
        if n == 0 {
            return Err(format!("cannot copy {len} bytes into {path}: no progress at byte {done}"));
        }
        done += n as usize;
    }
    map(fd, len, Some(start))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_round() {
        let p = page_size();
        assert_eq!(page_floor(p + 1), p);
        assert_eq!(page_ceil(p + 1), 2 * p);
        assert_eq!(page_ceil(p), p);
    }

    #[test]
    fn aligned_mappings_are_aligned() {
        let path = format!("/dev/shm/ishmem-unit-al-{}", std::process::id());
        let fd = create(&path, 3 << 20).unwrap();
        unlink(&path);
        for align in [4096, 2 << 20, 1 << 30] {
            let a = map_aligned(&fd, 3 << 20, align).unwrap();
            assert_eq!(a % align, 0, "{a:#x} % {align:#x}");
            // SAFETY: the mapping is 3 MiB long.
            unsafe { *((a + (3 << 20) - 8) as *mut u64) = 1 };
        }
    }

    #[test]
    fn a_file_maps_twice_to_the_same_memory() {
        let path = format!("/dev/shm/ishmem-unit-{}", std::process::id());
        let fd = create(&path, 1 << 20).unwrap();
        assert!(create(&path, 1 << 20).unwrap_err().contains("cannot create"));
        let a = map(&fd, 1 << 20, None).unwrap();
        let fd2 = open_checked(&path, 1 << 20).unwrap();
        let b = map(&fd2, 1 << 20, None).unwrap();
        unlink(&path);
        assert_ne!(a, b);
        // SAFETY: both mappings are 1 MiB long and alias the same file.
        unsafe {
            *((a + 4096) as *mut u64) = 0xfeed;
            assert_eq!(*((b + 4096) as *const u64), 0xfeed);
        }
        assert!(open_checked(&path, 1).is_err());
    }

    #[test]
    fn share_in_place_keeps_the_bytes_and_shares_them() {
        // an anonymous private range of 3 pages with a pattern, moved into a shared file
        let len = 3 * page_size();
        // SAFETY: a fresh anonymous mapping; nothing is overwritten.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        assert_ne!(p, libc::MAP_FAILED);
        let a = p as usize;
        // SAFETY: the mapping is len bytes long.
        let s = unsafe { std::slice::from_raw_parts_mut(a as *mut u8, len) };
        for (i, b) in s.iter_mut().enumerate() {
            *b = (i * 7 % 251) as u8;
        }
        let path = format!("/dev/shm/ishmem-unit-sip-{}", std::process::id());
        let fd = share_in_place(&path, a, len).unwrap();
        let other = map(&open_checked(&path, len).unwrap(), len, None).unwrap();
        unlink(&path);
        // SAFETY: both mappings are len bytes long.
        let (s, o) = unsafe { (std::slice::from_raw_parts_mut(a as *mut u8, len), std::slice::from_raw_parts(other as *const u8, len)) };
        assert!(s.iter().enumerate().all(|(i, &b)| b == (i * 7 % 251) as u8), "bytes changed by the move");
        assert_eq!(s, o);
        s[len - 1] = 0xab;
        assert_eq!(o[len - 1], 0xab, "the range is not shared with the file");
        drop(fd);
        // SAFETY: both were mapped above with this length.
        unsafe {
            libc::munmap(a as *mut libc::c_void, len);
            libc::munmap(other as *mut libc::c_void, len);
        }
    }

    static mut GLOBAL: [u64; 8] = [7; 8];

    #[test]
    fn the_own_part_leaves_the_loader_range_out() {
        assert_eq!(own_part(0x4000, 0x1000, None), (0x4000, 0x1000));
        // GNU ld, partial RELRO: .got.plt straddles the RELRO end, then .data
        assert_eq!(own_part(0x4000, 0x1000, Some((0x3fe8, 0xc0))), (0x40a8, 0xf58));
        // full RELRO: .got.plt in the read-only pages, before the region
        assert_eq!(own_part(0x4000, 0x1000, Some((0x3fd0, 0x30))), (0x4000, 0x1000));
        // no RELRO: .dynamic, .got, .got.plt at the start of the region
        assert_eq!(own_part(0x3000, 0x2000, Some((0x3300, 0x28))), (0x3328, 0x1cd8));
        // a .got.plt after a small .data: the larger part after it
        assert_eq!(own_part(0x4000, 0x3000, Some((0x4100, 0x40))), (0x4140, 0x2ec0));
        // after a large .data: the part before it
        assert_eq!(own_part(0x4000, 0x3000, Some((0x6f00, 0x40))), (0x4000, 0x2f00));
    }

    extern "C" {
        /// The start of the executable's .data (crt1's symbol; the test binary is an executable).
        static __data_start: u8;
    }

    #[test]
    fn the_own_part_starts_at_the_programs_data() {
        let (start, len) = main_data_segment().expect("test binary has a data segment");
        let loader = main_loader_data();
        let (s, l) = own_part(start, len, loader);
        let data_start = std::ptr::addr_of!(__data_start) as usize;
        let global = std::ptr::addr_of!(GLOBAL) as usize;
        assert!(s <= data_start && data_start < s + l, "{data_start:#x} not in {s:#x}+{l:#x} (loader {loader:x?})");
        assert!(global >= s && global < s + l, "{global:#x} not in {s:#x}+{l:#x}");
        if let Some((g, n)) = loader {
            assert!(g + n <= s || g >= s + l, "the loader's {g:#x}+{n:#x} is in {s:#x}+{l:#x}");
            assert!(g + n <= data_start || g >= data_start, "{g:#x}+{n:#x} overlaps __data_start {data_start:#x}");
        }
    }

    #[test]
    fn the_data_segment_is_found_and_holds_globals() {
        let (start, len) = main_data_segment().expect("test binary has a data segment");
        let addr = std::ptr::addr_of!(GLOBAL) as usize;
        assert!(addr >= start && addr < start + len, "{addr:#x} not in {start:#x}+{len:#x}");
    }
}
