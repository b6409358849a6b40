//! Opening and closing the libfabric objects of one [`Fabric`](super::Fabric): provider choice
//! (fi_getinfo with our hints, `ISHMEM_OFI_PROVIDER` semantics for the name filter), then
//! fabric, domain, AV, CQ, the two completion counters and the RDM endpoint, and the reverse
//! order at the end. Owns the `fi_info` list handling; knows nothing of RMA or PEs.

use super::sys::*;
use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr;

/// The API version passed to fi_getinfo: the one these mirrors were written against (1.17),
/// or the loaded library's own if that is older (1.9 at least: `FABRIC_1.3` is resolved).
pub(super) fn api_version(lib: &Lib) -> u32 {
    let (maj, min) = lib.loaded_version();
    fi_version(maj, min).min(fi_version(1, 17))
}

/// The capabilities every entry must have.
pub(super) const CAPS: u64 = FI_MSG | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
/// The mr_mode bits this transport handles (FI_MR_LOCAL through registered regions and
/// bounce buffers; see the module comment of `mod.rs`).
pub(super) const MR_MODES: c_int = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;

fn cstr(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: libfabric strings in fi_info are NUL-terminated and live as long as the info.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// An owned fi_info list (freed with the library's fi_freeinfo).
pub(super) struct InfoList {
    lib: &'static Lib,
    pub head: *mut fi_info,
}

impl Drop for InfoList {
    fn drop(&mut self) {
        if !self.head.is_null() {
            // SAFETY: head came from fi_getinfo/fi_dupinfo of this library and is freed once.
            unsafe { (self.lib.freeinfo)(self.head) };
        }
    }
}

impl InfoList {
    /// The entries, in the provider's order of preference.
    pub fn iter(&self) -> impl Iterator<Item = &fi_info> {
        let mut p = self.head;
        std::iter::from_fn(move || {
            // SAFETY: p is the list head or a `next` of a live entry: NULL or a live entry
            // that lives as long as the list.
            let i = unsafe { p.as_ref() }?;
            p = i.next;
            Some(i)
        })
    }
}

/// The provider name of an entry.
pub(super) fn prov_name(i: &fi_info) -> String {
    // SAFETY: fabric_attr of a returned entry is NULL or a live attr.
    unsafe { i.fabric_attr.as_ref() }.map(|f| cstr(f.prov_name)).unwrap_or_default()
}

/// fi_getinfo with our hints plus `extra` capabilities (FI_HMEM, to ask whether it is
/// offered); `provider` filters by name; `with_caps` false asks with no hints at all (only to
/// list what exists). `Err` carries the fi_getinfo error text.
pub(super) fn getinfo(lib: &'static Lib, provider: Option<&str>, with_caps: bool, extra: u64) -> Result<InfoList, String> {
    getinfo_inject(lib, provider, with_caps, extra, 0)
}

/// [`getinfo`] asking an inject size of `inject` bytes as well (0: none asked, the provider's
/// default).
fn getinfo_inject(lib: &'static Lib, provider: Option<&str>, with_caps: bool, extra: u64, inject: usize) -> Result<InfoList, String> {
    let hints = if with_caps {
        // SAFETY: fi_dupinfo(NULL) allocates a zeroed fi_info with every attr allocated.
        let h = unsafe { (lib.dupinfo)(ptr::null()) };
        if h.is_null() {
            return Err("fi_allocinfo failed".into());
        }
        // SAFETY: h and its attrs were just allocated by the library and are ours to fill;
        // prov_name is strdup'ed because fi_freeinfo frees it.
        unsafe {
            (*h).caps = CAPS | extra;
            (*h).mode = 0; // we support no mode bits (no FI_CONTEXT, no FI_ASYNC_IOV, ...)
            (*(*h).ep_attr).type_ = FI_EP_RDM;
            let d = &mut *(*h).domain_attr;
            d.threading = FI_THREAD_SAFE;
            d.av_type = FI_AV_TABLE;
            d.mr_mode = MR_MODES | if extra & FI_HMEM != 0 { FI_MR_HMEM } else { 0 };
            (*(*h).tx_attr).op_flags = FI_DELIVERY_COMPLETE;
            (*(*h).tx_attr).inject_size = inject;
            if let Some(p) = provider {
                let c = CString::new(p).map_err(|_| format!("provider name {p:?} contains a NUL byte"))?;
                (*(*h).fabric_attr).prov_name = libc::strdup(c.as_ptr());
            }
        }
        InfoList { lib, head: h }
    } else {
        InfoList { lib, head: ptr::null_mut() }
    };
    let mut out: *mut fi_info = ptr::null_mut();
    // SAFETY: hints is NULL or a live fi_info of the FABRIC_1.3 layout; out is writable.
    let r = unsafe { (lib.getinfo)(api_version(lib), ptr::null(), ptr::null(), 0, hints.head, &mut out) };
    let list = InfoList { lib, head: out };
    if r != 0 {
        return Err(format!("fi_getinfo: {}", lib.strerror(r)));
    }
    Ok(list)
}

/// The provider names of a list, first appearance order, without repeats.
pub(super) fn names(list: &InfoList) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for n in list.iter().map(prov_name) {
        if !v.contains(&n) {
            v.push(n);
        }
    }
    v
}

/// Whether the provider named `name` (as fi_info names it) is libfabric's tcp provider, alone
/// or under a utility provider (`tcp;ofi_rxm`): the one whose larger inject size is measured
/// (`Options::inject_ask`).
pub(super) fn tcp_based(name: &str) -> bool {
    name.split(';').next() == Some("tcp")
}

/// Chooses the entry to open: the first that fi_getinfo returns for our hints (RDM, RMA,
/// ATOMIC, thread safe, our mr_mode bits) and that needs no mode bit; then, where that is
/// tcp-based and `inject` is larger than its inject size, the same provider's entry with
/// `inject` asked, if it offers one (else the first stays). `Err` is the one-line message
/// that names what libfabric offered and how to choose.
pub(super) fn choose(lib: &'static Lib, provider: Option<&str>, inject: usize) -> Result<InfoList, String> {
    let found = getinfo(lib, provider, true, 0);
    if let Ok(list) = &found {
        if let Some(i) = list.iter().find(|i| i.mode == 0) {
            let name = prov_name(i);
            // SAFETY: tx_attr of a returned entry is a live attr.
            let default = unsafe { (*i.tx_attr).inject_size };
            let larger = if inject > default && tcp_based(&name) { getinfo_inject(lib, Some(&name), true, 0, inject).ok() } else { None };
            let pick = larger
                .as_ref()
                // SAFETY: tx_attr of a returned entry is a live attr.
                .and_then(|l| l.iter().find(|j| j.mode == 0 && prov_name(j) == name && unsafe { (*j.tx_attr).inject_size } >= inject))
                .unwrap_or(i);
            // SAFETY: pick is a live entry (of `found` or `larger`, both alive here); fi_dupinfo
            // copies that one entry (next = NULL).
            let one = unsafe { (lib.dupinfo)(pick) };
            if one.is_null() {
                return Err("fi_dupinfo failed".into());
            }
            return Ok(InfoList { lib, head: one });
        }
    }
    let why = match &found {
        Err(e) => e.clone(),
        Ok(_) => "only entries that need mode bits (FI_CONTEXT, ...)".into(),
    };
    let offered = match getinfo(lib, None, true, 0) {
        Ok(l) if !l.head.is_null() => format!("providers with FI_EP_RDM+FI_RMA+FI_ATOMIC: {}", names(&l).join(", ")),
        _ => match getinfo(lib, None, false, 0) {
            Ok(l) => format!(
                "no provider offers FI_EP_RDM+FI_RMA+FI_ATOMIC; providers present: {}",
                if l.head.is_null() { "none".into() } else { names(&l).join(", ") }
            ),
            Err(e) => format!("no provider at all ({e})"),
        },
    };
    Err(match provider {
        Some(p) => format!(
            "libfabric provider '{p}' is not usable (FI_EP_RDM with FI_RMA and FI_ATOMIC; {why}); {offered}; \
             choose one with ISHMEM_OFI_PROVIDER"
        ),
        None => format!("no usable libfabric provider ({why}); {offered}; choose one with ISHMEM_OFI_PROVIDER"),
    })
}

/// `Ok(())` for a zero return, else the call and fi_strerror's text.
pub(super) fn check(lib: &Lib, call: &str, r: c_int) -> Result<(), String> {
    if r == 0 {
        Ok(())
    } else {
        Err(format!("{call} failed: {} ({r})", lib.strerror(r)))
    }
}

/// fi_close of any fid (through its ops table); the error names `what`.
///
/// # Safety
/// `f` is NULL or a live fid that nothing uses afterwards.
pub(super) unsafe fn close(lib: &Lib, what: &str, f: *mut fid) -> Result<(), String> {
    if f.is_null() {
        return Ok(());
    }
    // SAFETY: f is a live fid (the caller's contract).
    let close = has_op!(unsafe { (*f).ops }, fi_ops, close)?;
    // SAFETY: as above.
    check(lib, &format!("fi_close({what})"), unsafe { close(f) })
}

/// fi_bind through the fid's ops (fi_ep_bind / fi_mr_bind are this call).
///
/// # Safety
/// `f` and `to` are live fids.
pub(super) unsafe fn bind(lib: &Lib, what: &str, f: *mut fid, to: *mut fid, flags: u64) -> Result<(), String> {
    // SAFETY: f and to are live fids of this module.
    let bind = has_op!(unsafe { (*f).ops }, fi_ops, bind)?;
    // SAFETY: as above.
    check(lib, what, unsafe { bind(f, to, flags) })
}

/// fi_control(FI_ENABLE) (fi_enable / fi_mr_enable).
///
/// # Safety
/// `f` is a live fid.
pub(super) unsafe fn enable(lib: &Lib, what: &str, f: *mut fid) -> Result<(), String> {
    // SAFETY: f is a live fid of this module.
    let control = has_op!(unsafe { (*f).ops }, fi_ops, control)?;
    // SAFETY: FI_ENABLE takes no argument.
    check(lib, what, unsafe { control(f, FI_ENABLE, ptr::null_mut()) })
}

/// The open objects of one endpoint. Fields are NULL until opened; `close_all` closes what is
/// open, in reverse order of opening.
pub(super) struct Objects {
    pub info: InfoList,
    pub fabric: *mut fid_fabric,
    pub domain: *mut fid_domain,
    pub av: *mut fid_av,
    pub cq: *mut fid_cq,
    pub put_cntr: *mut fid_cntr,
    pub get_cntr: *mut fid_cntr,
    pub ep: *mut fid_ep,
    /// The CQ's wait fd (FI_WAIT_FD, opened for manual-progress providers where the provider
    /// has it): readable when the provider has something to progress; -1 when none.
    pub wait_fd: c_int,
}

impl Objects {
    /// Opens everything for the chosen entry; on error, what was opened is closed again.
    /// `wait_fd`: give a manual-progress provider's CQ a wait fd (`Options::wait_fd`);
    /// `write_counter`: open and bind the write counter (else `put_cntr` stays NULL: the
    /// writes are counted from the CQ, `Fabric::writes_in_cq`).
    pub fn open(lib: &'static Lib, info: InfoList, av_count: usize, wait_fd: bool, write_counter: bool) -> Result<Objects, String> {
        let mut o = Objects {
            info,
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            av: ptr::null_mut(),
            cq: ptr::null_mut(),
            put_cntr: ptr::null_mut(),
            get_cntr: ptr::null_mut(),
            ep: ptr::null_mut(),
            wait_fd: -1,
        };
        match o.open_inner(lib, av_count, wait_fd, write_counter) {
            Ok(()) => Ok(o),
            Err(e) => {
                o.close_all(lib);
                Err(e)
            }
        }
    }

    fn open_inner(&mut self, lib: &'static Lib, av_count: usize, wait_fd: bool, write_counter: bool) -> Result<(), String> {
        let info = self.info.head;
        // SAFETY: info is the live single entry we chose; every object pointer passed below
        // was returned by the previous open call; each ops member is checked by has_op!.
        unsafe {
            check(lib, "fi_fabric", (lib.fabric)((*info).fabric_attr, &mut self.fabric, ptr::null_mut()))?;
            let domain = has_op!((*self.fabric).ops, fi_ops_fabric, domain)?;
            check(lib, "fi_domain", domain(self.fabric, info, &mut self.domain, ptr::null_mut()))?;
            let dops = (*self.domain).ops;

            let mut av_attr = fi_av_attr {
                type_: FI_AV_TABLE,
                rx_ctx_bits: 0,
                count: av_count,
                ep_per_node: 0,
                name: ptr::null(),
                map_addr: ptr::null_mut(),
                flags: 0,
            };
            let av_open = has_op!(dops, fi_ops_domain, av_open)?;
            check(lib, "fi_av_open", av_open(self.domain, &mut av_attr, &mut self.av, ptr::null_mut()))?;

            let cq_attr = |wait_obj| fi_cq_attr {
                size: 0,
                flags: 0,
                format: FI_CQ_FORMAT_CONTEXT,
                wait_obj,
                signaling_vector: 0,
                wait_cond: 0,
                wait_set: ptr::null_mut(),
            };
            let cq_open = has_op!(dops, fi_ops_domain, cq_open)?;
            // Manual progress: a CQ with a wait fd lets the progress thread sleep until the
            // provider has work (fi_trywait, then poll) instead of polling on a timer, where
            // the caller asks for one (`Options::wait_fd`: it costs every operation the
            // provider's signal); where the provider has no such CQ, the plain one.
            let manual = (*(*info).domain_attr).data_progress == FI_PROGRESS_MANUAL;
            let mut waited = false;
            if manual && wait_fd {
                let mut a = cq_attr(FI_WAIT_FD);
                waited = cq_open(self.domain, &mut a, &mut self.cq, ptr::null_mut()) == 0;
                if !waited {
                    self.cq = ptr::null_mut();
                }
            }
            if !waited {
                let mut a = cq_attr(FI_WAIT_NONE);
                check(lib, "fi_cq_open", cq_open(self.domain, &mut a, &mut self.cq, ptr::null_mut()))?;
            }

            let cntr_open = has_op!(dops, fi_ops_domain, cntr_open)?;
            let mut cntrs = vec![&mut self.get_cntr];
            if write_counter {
                cntrs.push(&mut self.put_cntr);
            }
            for c in cntrs {
                let mut attr = fi_cntr_attr { events: FI_CNTR_EVENTS_COMP, wait_obj: FI_WAIT_NONE, wait_set: ptr::null_mut(), flags: 0 };
                check(lib, "fi_cntr_open", cntr_open(self.domain, &mut attr, c, ptr::null_mut()))?;
            }

            let endpoint = has_op!(dops, fi_ops_domain, endpoint)?;
            check(lib, "fi_endpoint", endpoint(self.domain, info, &mut self.ep, ptr::null_mut()))?;
            let ep = &mut (*self.ep).fid as *mut fid;
            bind(lib, "fi_ep_bind(av)", ep, &mut (*self.av).fid, 0)?;
            bind(lib, "fi_ep_bind(cq)", ep, &mut (*self.cq).fid, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)?;
            if write_counter {
                bind(lib, "fi_ep_bind(put counter)", ep, &mut (*self.put_cntr).fid, FI_WRITE)?;
            }
            bind(lib, "fi_ep_bind(get counter)", ep, &mut (*self.get_cntr).fid, FI_READ)?;
            enable(lib, "fi_enable(endpoint)", ep)?;
            if waited {
                let mut fd: c_int = -1;
                let got = match (*(*self.cq).fid.ops).control {
                    Some(control) => control(&mut (*self.cq).fid, FI_GETWAIT, (&mut fd as *mut c_int).cast()),
                    None => -1,
                };
                if got == 0 && fd >= 0 {
                    self.wait_fd = fd;
                }
            }
        }
        Ok(())
    }

    /// Closes every open object, endpoint first, fabric last; errors are ignored (nothing
    /// useful can be done with them at teardown).
    pub fn close_all(&mut self, lib: &Lib) {
        // SAFETY: each pointer is NULL or a live object of this module; it is closed once
        // and set to NULL.
        unsafe {
            let fids: [(&str, *mut fid); 7] = [
                ("endpoint", self.ep.cast()),
                ("cq", self.cq.cast()),
                ("put counter", self.put_cntr.cast()),
                ("get counter", self.get_cntr.cast()),
                ("av", self.av.cast()),
                ("domain", self.domain.cast()),
                ("fabric", self.fabric.cast()),
            ];
            for (what, f) in fids {
                let _ = close(lib, what, f);
            }
        }
        self.ep = ptr::null_mut();
        self.cq = ptr::null_mut();
        self.put_cntr = ptr::null_mut();
        self.get_cntr = ptr::null_mut();
        self.av = ptr::null_mut();
        self.domain = ptr::null_mut();
        self.fabric = ptr::null_mut();
    }

    /// The chosen entry.
    pub fn info(&self) -> &fi_info {
        // SAFETY: the list holds exactly one live entry while self lives.
        unsafe { &*self.info.head }
    }

    /// fi_getname of the endpoint.
    pub fn name(&self, lib: &Lib) -> Result<Vec<u8>, String> {
        // SAFETY: ep is live; its cm table is checked by has_op!.
        let getname = has_op!(unsafe { (*self.ep).cm }, fi_ops_cm, getname)?;
        let mut buf = vec![0u8; 256];
        loop {
            let mut len = buf.len();
            // SAFETY: buf has len writable bytes; the fid is the endpoint's.
            let r = unsafe { getname(&mut (*self.ep).fid, buf.as_mut_ptr().cast::<c_void>(), &mut len) };
            if r == -FI_ETOOSMALL && len > buf.len() {
                // len is the size needed
                buf.resize(len, 0);
                continue;
            }
            check(lib, "fi_getname", r)?;
            buf.truncate(len);
            return Ok(buf);
        }
    }
}

/// The text of a C string member of the chosen entry.
pub(super) fn text(p: *const std::ffi::c_char) -> String {
    cstr(p)
}
