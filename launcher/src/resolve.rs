//! Locating the program to launch before any PE is started.
//!
//! Follows `execvp` conventions, as mpirun does: a name containing `/` is used
//! as a path, anything else is searched in `PATH` and then, like mpirun, in the
//! current directory (`ishmrun -n 4 prog` runs `./prog` when no `prog` is on
//! the `PATH`). Checking up front lets `ishmrun` fail with a clear message (and
//! exit status 2) instead of starting N processes that all fail the same way.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// `PATH` used when the variable is unset (the `execvp` default).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Finds `program` the way `execvp` would. On failure returns the OS error
/// that `execvp` would most plausibly have reported.
pub fn find_program(program: &OsStr, path_var: Option<&OsStr>) -> Result<PathBuf, io::Error> {
    if program.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        return check_executable(&path).map(|()| path);
    }
    let in_path = search_path(program, path_var.unwrap_or_else(|| OsStr::new(DEFAULT_PATH)));
    match in_path {
        Ok(p) => Ok(p),
        Err(e) => {
            let here = Path::new(".").join(program);
            match check_executable(&here) {
                Ok(()) => Ok(here),
                // A file here that cannot run says more than "not found in PATH".
                Err(h) if here.exists() => Err(h),
                Err(_) => Err(e),
            }
        }
    }
}

/// Searches the directories of `path_var`. A permission error on some
/// candidate is remembered and reported if nothing usable is found.
fn search_path(program: &OsStr, path_var: &OsStr) -> Result<PathBuf, io::Error> {
    let mut saw_denied = false;
    for dir in std::env::split_paths(path_var) {
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let candidate = dir.join(program);
        match check_executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => saw_denied = true,
            Err(_) => {}
        }
    }
    let errno = if saw_denied { libc::EACCES } else { libc::ENOENT };
    Err(io::Error::from_raw_os_error(errno))
}

/// Succeeds when `path` is a non-directory that the caller may execute.
fn check_executable(path: &Path) -> Result<(), io::Error> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EACCES));
    }
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))?;
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call;
    // access(2) only reads it.
    let rc = unsafe { libc::access(c_path.as_ptr(), libc::X_OK) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The text of an OS error without Rust's " (os error N)" suffix, e.g.
/// "No such file or directory".
pub fn error_text(err: &io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(pos) => text[..pos].to_string(),
        None => text,
    }
}

/// Finds `program` using this process's `PATH`.
pub fn find_in_env(program: &OsStr) -> Result<PathBuf, io::Error> {
    let path_var: Option<OsString> = std::env::var_os("PATH");
    find_program(program, path_var.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_in_path() {
        let found = find_program(OsStr::new("sh"), Some(OsStr::new("/nonexistent:/bin:/usr/bin")));
        let path = found.expect("sh should be found");
        assert!(path.ends_with("sh"));
    }

    #[test]
    fn missing_program_is_enoent() {
        let e = find_program(OsStr::new("no-such-prog-ishmrun"), Some(OsStr::new("/bin"))).expect_err("must fail");
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(error_text(&e), "No such file or directory");
    }

    #[test]
    fn explicit_paths() {
        assert!(find_program(OsStr::new("/bin/sh"), None).is_ok());
        let e = find_program(OsStr::new("./definitely/not/here"), None).expect_err("must fail");
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        let e = find_program(OsStr::new("/"), None).expect_err("directory");
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
        let e = find_program(OsStr::new(""), None).expect_err("empty");
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn current_directory_after_path() {
        // issue 14: a program in the current directory is found without ./ (as by mpirun);
        // the test process's current directory is the crate's, which holds Cargo.toml (not
        // executable) and src/ (a directory).
        let dir = std::env::temp_dir().join(format!("ishmrun-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prog = dir.join("ishmrun-test-prog");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        let here = std::env::current_dir().unwrap();
        std::env::set_current_dir(&dir).unwrap();
        let found = find_program(OsStr::new("ishmrun-test-prog"), Some(OsStr::new("/nonexistent")));
        let missing = find_program(OsStr::new("ishmrun-no-such-prog"), Some(OsStr::new("/nonexistent")));
        std::env::set_current_dir(here).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.unwrap(), Path::new("./ishmrun-test-prog"));
        assert_eq!(missing.unwrap_err().raw_os_error(), Some(libc::ENOENT));
        // PATH comes first: sh is /bin/sh or /usr/bin/sh, not ./sh
        assert!(find_program(OsStr::new("sh"), Some(OsStr::new("/bin:/usr/bin"))).unwrap().is_absolute());
    }

    #[test]
    fn directory_in_path_is_not_a_program() {
        // "/" contains "tmp", a directory: that must not count as found.
        let e = find_program(OsStr::new("tmp"), Some(OsStr::new("/"))).expect_err("dir");
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    }
}
