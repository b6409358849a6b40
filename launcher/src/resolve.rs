//! Locating the program to launch before any PE is started.
//!
//! Follows `execvp` conventions: a name containing `/` is used as a path,
//! anything else is searched in `PATH`. Checking up front lets `ishmrun` fail
//! with a clear message (and exit status 2) instead of starting N processes
//! that all fail the same way.

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
    search_path(
        program,
        path_var.unwrap_or_else(|| OsStr::new(DEFAULT_PATH)),
    )
}

/// Searches the directories of `path_var`. A permission error on some
/// candidate is remembered and reported if nothing usable is found.
fn search_path(program: &OsStr, path_var: &OsStr) -> Result<PathBuf, io::Error> {
    let mut saw_denied = false;
    for dir in std::env::split_paths(path_var) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        match check_executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => saw_denied = true,
            Err(_) => {}
        }
    }
    let errno = if saw_denied {
        libc::EACCES
    } else {
        libc::ENOENT
    };
    Err(io::Error::from_raw_os_error(errno))
}

/// Succeeds when `path` is a non-directory that the caller may execute.
fn check_executable(path: &Path) -> Result<(), io::Error> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EACCES));
    }
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))?;
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
        let found = find_program(
            OsStr::new("sh"),
            Some(OsStr::new("/nonexistent:/bin:/usr/bin")),
        );
        let path = found.expect("sh should be found");
        assert!(path.ends_with("sh"));
    }

    #[test]
    fn missing_program_is_enoent() {
        let e = find_program(OsStr::new("no-such-prog-ishmrun"), Some(OsStr::new("/bin")))
            .expect_err("must fail");
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
    fn directory_in_path_is_not_a_program() {
        // "/" contains "tmp", a directory: that must not count as found.
        let e = find_program(OsStr::new("tmp"), Some(OsStr::new("/"))).expect_err("dir");
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    }
}
