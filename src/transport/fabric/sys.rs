//! The libfabric 1.17 ABI as this crate uses it: `#[repr(C)]` mirrors of the structs (the
//! `FABRIC_1.3` layouts: fi_info and its attrs, the fid objects and their ops tables), the
//! constants, and the run-time loader of `libfabric.so.1` (dlopen; no link-time dependency).
//!
//! Only six functions are exported by libfabric and resolved here, each pinned to the symbol
//! version whose layout these mirrors declare (`dlvsym`): fi_getinfo/fi_freeinfo/fi_dupinfo
//! (`FABRIC_1.3`), fi_fabric (`FABRIC_1.1`), fi_strerror/fi_version (`FABRIC_1.0`). Everything
//! else (fi_domain, fi_write, fi_atomic, fi_cntr_read, ...) is a `static inline` in the headers
//! that calls through the object's ops table; `mod.rs` makes those calls, after checking the
//! table's leading `size` with [`has_op!`]. Names follow the C headers, so that the layout test
//! (`layout_tests` below) can compare every struct and member with `/usr/include/rdma`.
//! Owns no state beyond the leaked library handle; knows nothing of PEs or heaps.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

pub type fi_addr_t = u64;
pub type fid_t = *mut fid;
/// A table member this crate never calls: only its size (one pointer) matters.
pub type Unused = Option<unsafe extern "C" fn()>;

pub const fn fi_version(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

// Capability and operation flags (fabric.h).
pub const FI_MSG: u64 = 1 << 1;
pub const FI_RMA: u64 = 1 << 2;
pub const FI_ATOMIC: u64 = 1 << 4;
pub const FI_READ: u64 = 1 << 8;
pub const FI_WRITE: u64 = 1 << 9;
pub const FI_RECV: u64 = 1 << 10;
pub const FI_SEND: u64 = 1 << 11;
pub const FI_TRANSMIT: u64 = FI_SEND;
pub const FI_REMOTE_READ: u64 = 1 << 12;
pub const FI_REMOTE_WRITE: u64 = 1 << 13;
pub const FI_FENCE: u64 = 1 << 21;
pub const FI_COMPLETION: u64 = 1 << 24;
pub const FI_INJECT: u64 = 1 << 25;
pub const FI_INJECT_COMPLETE: u64 = 1 << 26;
pub const FI_TRANSMIT_COMPLETE: u64 = 1 << 27;
pub const FI_DELIVERY_COMPLETE: u64 = 1 << 28;
pub const FI_HMEM: u64 = 1 << 47;
pub const FI_RMA_EVENT: u64 = 1 << 56;
/// fi_ep_bind flag: only operations posted with FI_COMPLETION produce success entries.
pub const FI_SELECTIVE_COMPLETION: u64 = 1 << 59;

// Mode bits (fabric.h).
pub const FI_CONTEXT: u64 = 1 << 59;
pub const FI_CONTEXT2: u64 = 1 << 52;

// msg_order bits.
pub const FI_ORDER_RAW: u64 = 1 << 1;
pub const FI_ORDER_WAW: u64 = 1 << 4;
pub const FI_ORDER_RMA_RAW: u64 = 1 << 33;
pub const FI_ORDER_RMA_WAW: u64 = 1 << 35;
pub const FI_ORDER_ATOMIC_RAW: u64 = 1 << 37;
pub const FI_ORDER_ATOMIC_WAW: u64 = 1 << 39;

// mr_mode bits (an int in fi_domain_attr).
pub const FI_MR_BASIC: c_int = 1 << 0;
pub const FI_MR_SCALABLE: c_int = 1 << 1;
pub const FI_MR_LOCAL: c_int = 1 << 2;
pub const FI_MR_RAW: c_int = 1 << 3;
pub const FI_MR_VIRT_ADDR: c_int = 1 << 4;
pub const FI_MR_ALLOCATED: c_int = 1 << 5;
pub const FI_MR_PROV_KEY: c_int = 1 << 6;
pub const FI_MR_MMU_NOTIFY: c_int = 1 << 7;
pub const FI_MR_RMA_EVENT: c_int = 1 << 8;
pub const FI_MR_ENDPOINT: c_int = 1 << 9;
pub const FI_MR_HMEM: c_int = 1 << 10;
pub const FI_MR_COLLECTIVE: c_int = 1 << 11;
/// Every mr_mode bit with its name, in bit order (for `Info::mr_mode_text`).
pub const MR_MODE_NAMES: [(c_int, &str); 12] = [
    (FI_MR_BASIC, "FI_MR_BASIC"),
    (FI_MR_SCALABLE, "FI_MR_SCALABLE"),
    (FI_MR_LOCAL, "FI_MR_LOCAL"),
    (FI_MR_RAW, "FI_MR_RAW"),
    (FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"),
    (FI_MR_ALLOCATED, "FI_MR_ALLOCATED"),
    (FI_MR_PROV_KEY, "FI_MR_PROV_KEY"),
    (FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"),
    (FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"),
    (FI_MR_ENDPOINT, "FI_MR_ENDPOINT"),
    (FI_MR_HMEM, "FI_MR_HMEM"),
    (FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"),
];

// Enumerations (C enums: int).
pub const FI_EP_RDM: c_int = 3;
pub const FI_AV_TABLE: c_int = 2;
pub const FI_PROGRESS_AUTO: c_int = 1;
pub const FI_PROGRESS_MANUAL: c_int = 2;
pub const FI_THREAD_SAFE: c_int = 1;
pub const FI_WAIT_NONE: c_int = 0;
pub const FI_WAIT_FD: c_int = 3;
pub const FI_CQ_FORMAT_CONTEXT: c_int = 1;
pub const FI_CNTR_EVENTS_COMP: c_int = 0;
/// fi_control command that enables an endpoint or an FI_MR_ENDPOINT registration.
pub const FI_ENABLE: c_int = 6;
/// fi_control command that returns a CQ's wait object (an fd for FI_WAIT_FD).
pub const FI_GETWAIT: c_int = 5;

// enum fi_datatype
pub const FI_INT8: c_int = 0;
pub const FI_UINT8: c_int = 1;
pub const FI_INT16: c_int = 2;
pub const FI_UINT16: c_int = 3;
pub const FI_INT32: c_int = 4;
pub const FI_UINT32: c_int = 5;
pub const FI_INT64: c_int = 6;
pub const FI_UINT64: c_int = 7;
pub const FI_FLOAT: c_int = 8;
pub const FI_DOUBLE: c_int = 9;

// enum fi_op
pub const FI_MIN: c_int = 0;
pub const FI_MAX: c_int = 1;
pub const FI_SUM: c_int = 2;
pub const FI_PROD: c_int = 3;
pub const FI_LOR: c_int = 4;
pub const FI_LAND: c_int = 5;
pub const FI_BOR: c_int = 6;
pub const FI_BAND: c_int = 7;
pub const FI_LXOR: c_int = 8;
pub const FI_BXOR: c_int = 9;
pub const FI_ATOMIC_READ: c_int = 10;
pub const FI_ATOMIC_WRITE: c_int = 11;
pub const FI_CSWAP: c_int = 12;
pub const FI_CSWAP_NE: c_int = 13;
pub const FI_CSWAP_LE: c_int = 14;
pub const FI_CSWAP_LT: c_int = 15;
pub const FI_CSWAP_GE: c_int = 16;
pub const FI_CSWAP_GT: c_int = 17;
pub const FI_MSWAP: c_int = 18;

// Error codes (fi_errno.h: errno values, then libfabric's own from 256).
pub const FI_EAGAIN: c_int = libc::EAGAIN;
pub const FI_ENOSYS: c_int = libc::ENOSYS;
pub const FI_ECANCELED: c_int = libc::ECANCELED;
/// `FI_ADDR_UNSPEC`: a receive from any source.
pub const FI_ADDR_UNSPEC: u64 = u64::MAX;
pub const FI_ENODATA: c_int = libc::ENODATA;
pub const FI_EOPNOTSUPP: c_int = libc::EOPNOTSUPP;
pub const FI_EOTHER: c_int = 256;
pub const FI_EAVAIL: c_int = 259;
pub const FI_ETOOSMALL: c_int = 257;
pub const FI_ENOKEY: c_int = 266;

#[repr(C)]
pub struct fi_tx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: usize,
    pub size: usize,
    pub iov_limit: usize,
    pub rma_iov_limit: usize,
    pub tclass: u32,
}

#[repr(C)]
pub struct fi_rx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub total_buffered_recv: usize,
    pub size: usize,
    pub iov_limit: usize,
}

#[repr(C)]
pub struct fi_ep_attr {
    pub type_: c_int,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: usize,
    pub msg_prefix_size: usize,
    pub max_order_raw_size: usize,
    pub max_order_war_size: usize,
    pub max_order_waw_size: usize,
    pub mem_tag_format: u64,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub auth_key_size: usize,
    pub auth_key: *mut u8,
}

#[repr(C)]
pub struct fi_domain_attr {
    pub domain: *mut fid_domain,
    pub name: *mut c_char,
    pub threading: c_int,
    pub control_progress: c_int,
    pub data_progress: c_int,
    pub resource_mgmt: c_int,
    pub av_type: c_int,
    pub mr_mode: c_int,
    pub mr_key_size: usize,
    pub cq_data_size: usize,
    pub cq_cnt: usize,
    pub ep_cnt: usize,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub max_ep_tx_ctx: usize,
    pub max_ep_rx_ctx: usize,
    pub max_ep_stx_ctx: usize,
    pub max_ep_srx_ctx: usize,
    pub cntr_cnt: usize,
    pub mr_iov_limit: usize,
    pub caps: u64,
    pub mode: u64,
    pub auth_key: *mut u8,
    pub auth_key_size: usize,
    pub max_err_data: usize,
    pub mr_cnt: usize,
    pub tclass: u32,
}

#[repr(C)]
pub struct fi_fabric_attr {
    pub fabric: *mut fid_fabric,
    pub name: *mut c_char,
    pub prov_name: *mut c_char,
    pub prov_version: u32,
    pub api_version: u32,
}

#[repr(C)]
pub struct fi_info {
    pub next: *mut fi_info,
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addrlen: usize,
    pub dest_addrlen: usize,
    pub src_addr: *mut c_void,
    pub dest_addr: *mut c_void,
    pub handle: fid_t,
    pub tx_attr: *mut fi_tx_attr,
    pub rx_attr: *mut fi_rx_attr,
    pub ep_attr: *mut fi_ep_attr,
    pub domain_attr: *mut fi_domain_attr,
    pub fabric_attr: *mut fi_fabric_attr,
    pub nic: *mut c_void,
}

#[repr(C)]
pub struct fi_ops {
    pub size: usize,
    pub close: Option<unsafe extern "C" fn(*mut fid) -> c_int>,
    pub bind: Option<unsafe extern "C" fn(*mut fid, *mut fid, u64) -> c_int>,
    pub control: Option<unsafe extern "C" fn(*mut fid, c_int, *mut c_void) -> c_int>,
    pub ops_open: Unused,
    pub tostr: Unused,
    pub ops_set: Unused,
}

#[repr(C)]
pub struct fid {
    pub fclass: usize,
    pub context: *mut c_void,
    pub ops: *mut fi_ops,
}

#[repr(C)]
pub struct fi_ops_fabric {
    pub size: usize,
    pub domain: Option<unsafe extern "C" fn(*mut fid_fabric, *mut fi_info, *mut *mut fid_domain, *mut c_void) -> c_int>,
    pub passive_ep: Unused,
    pub eq_open: Unused,
    pub wait_open: Unused,
    pub trywait: Option<unsafe extern "C" fn(*mut fid_fabric, *mut *mut fid, c_int) -> c_int>,
    pub domain2: Unused,
}

#[repr(C)]
pub struct fid_fabric {
    pub fid: fid,
    pub ops: *mut fi_ops_fabric,
    pub api_version: u32,
}

#[repr(C)]
pub struct fi_av_attr {
    pub type_: c_int,
    pub rx_ctx_bits: c_int,
    pub count: usize,
    pub ep_per_node: usize,
    pub name: *const c_char,
    pub map_addr: *mut c_void,
    pub flags: u64,
}

#[repr(C)]
pub struct fi_cq_attr {
    pub size: usize,
    pub flags: u64,
    pub format: c_int,
    pub wait_obj: c_int,
    pub signaling_vector: c_int,
    pub wait_cond: c_int,
    pub wait_set: *mut c_void,
}

#[repr(C)]
pub struct fi_cntr_attr {
    pub events: c_int,
    pub wait_obj: c_int,
    pub wait_set: *mut c_void,
    pub flags: u64,
}

#[repr(C)]
pub struct fi_atomic_attr {
    pub count: usize,
    pub size: usize,
}

#[repr(C)]
pub struct fi_ops_domain {
    pub size: usize,
    pub av_open: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_av_attr, *mut *mut fid_av, *mut c_void) -> c_int>,
    pub cq_open: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_cq_attr, *mut *mut fid_cq, *mut c_void) -> c_int>,
    pub endpoint: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_info, *mut *mut fid_ep, *mut c_void) -> c_int>,
    pub scalable_ep: Unused,
    pub cntr_open: Option<unsafe extern "C" fn(*mut fid_domain, *mut fi_cntr_attr, *mut *mut fid_cntr, *mut c_void) -> c_int>,
    pub poll_open: Unused,
    pub stx_ctx: Unused,
    pub srx_ctx: Unused,
    pub query_atomic: Option<unsafe extern "C" fn(*mut fid_domain, c_int, c_int, *mut fi_atomic_attr, u64) -> c_int>,
    pub query_collective: Unused,
    pub endpoint2: Unused,
}

#[repr(C)]
pub struct fi_ops_mr {
    pub size: usize,
    #[allow(clippy::type_complexity)]
    pub reg: Option<unsafe extern "C" fn(*mut fid, *const c_void, usize, u64, u64, u64, u64, *mut *mut fid_mr, *mut c_void) -> c_int>,
    pub regv: Unused,
    pub regattr: Unused,
}

#[repr(C)]
pub struct fid_domain {
    pub fid: fid,
    pub ops: *mut fi_ops_domain,
    pub mr: *mut fi_ops_mr,
}

#[repr(C)]
pub struct fi_ops_av {
    pub size: usize,
    pub insert: Option<unsafe extern "C" fn(*mut fid_av, *const c_void, usize, *mut fi_addr_t, u64, *mut c_void) -> c_int>,
    pub insertsvc: Unused,
    pub insertsym: Unused,
    pub remove: Unused,
    pub lookup: Unused,
    pub straddr: Unused,
    pub av_set: Unused,
}

#[repr(C)]
pub struct fid_av {
    pub fid: fid,
    pub ops: *mut fi_ops_av,
}

#[repr(C)]
pub struct fid_mr {
    pub fid: fid,
    pub mem_desc: *mut c_void,
    pub key: u64,
}

#[repr(C)]
pub struct fi_ops_cm {
    pub size: usize,
    pub setname: Unused,
    pub getname: Option<unsafe extern "C" fn(fid_t, *mut c_void, *mut usize) -> c_int>,
    pub getpeer: Unused,
    pub connect: Unused,
    pub listen: Unused,
    pub accept: Unused,
    pub reject: Unused,
    pub shutdown: Unused,
    pub join: Unused,
}

#[repr(C)]
pub struct fid_ep {
    pub fid: fid,
    pub ops: *mut c_void,
    pub cm: *mut fi_ops_cm,
    pub msg: *mut fi_ops_msg,
    pub rma: *mut fi_ops_rma,
    pub tagged: *mut c_void,
    pub atomic: *mut fi_ops_atomic,
    pub collective: *mut c_void,
}

#[repr(C)]
pub struct fi_rma_iov {
    pub addr: u64,
    pub len: usize,
    pub key: u64,
}

#[repr(C)]
pub struct fi_rma_ioc {
    pub addr: u64,
    pub count: usize,
    pub key: u64,
}

#[repr(C)]
pub struct fi_ioc {
    pub addr: *mut c_void,
    pub count: usize,
}

#[repr(C)]
pub struct fi_msg_rma {
    pub msg_iov: *const libc::iovec,
    pub desc: *mut *mut c_void,
    pub iov_count: usize,
    pub addr: fi_addr_t,
    pub rma_iov: *const fi_rma_iov,
    pub rma_iov_count: usize,
    pub context: *mut c_void,
    pub data: u64,
}

/// `struct fi_msg` (fi_sendmsg / fi_recvmsg).
#[repr(C)]
pub struct fi_msg {
    pub msg_iov: *const libc::iovec,
    pub desc: *mut *mut c_void,
    pub iov_count: usize,
    pub addr: fi_addr_t,
    pub context: *mut c_void,
    pub data: u64,
}

/// `struct fi_ops_msg`: only the msg forms are called (the batched AMOs of `batch.rs`).
#[repr(C)]
pub struct fi_ops_msg {
    pub size: usize,
    pub recv: Unused,
    pub recvv: Unused,
    pub recvmsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg, u64) -> isize>,
    pub send: Unused,
    pub sendv: Unused,
    pub sendmsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg, u64) -> isize>,
    pub inject: Unused,
    pub senddata: Unused,
    pub injectdata: Unused,
}

#[repr(C)]
pub struct fi_msg_atomic {
    pub msg_iov: *const fi_ioc,
    pub desc: *mut *mut c_void,
    pub iov_count: usize,
    pub addr: fi_addr_t,
    pub rma_iov: *const fi_rma_ioc,
    pub rma_iov_count: usize,
    pub datatype: c_int,
    pub op: c_int,
    pub context: *mut c_void,
    pub data: u64,
}

type RmaXfer = unsafe extern "C" fn(*mut fid_ep, *mut c_void, usize, *mut c_void, fi_addr_t, u64, u64, *mut c_void) -> isize;

#[repr(C)]
pub struct fi_ops_rma {
    pub size: usize,
    /// fi_read(ep, buf, len, desc, src_addr, addr, key, context)
    pub read: Option<RmaXfer>,
    pub readv: Unused,
    pub readmsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg_rma, u64) -> isize>,
    /// fi_write(ep, buf, len, desc, dest_addr, addr, key, context) (buf is const in C)
    pub write: Option<RmaXfer>,
    pub writev: Unused,
    pub writemsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg_rma, u64) -> isize>,
    pub inject: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, usize, fi_addr_t, u64, u64) -> isize>,
    pub writedata: Unused,
    pub injectdata: Unused,
}

pub type AtomicValid = unsafe extern "C" fn(*mut fid_ep, c_int, c_int, *mut usize) -> c_int;

#[repr(C)]
pub struct fi_ops_atomic {
    pub size: usize,
    pub write: Unused,
    pub writev: Unused,
    pub writemsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg_atomic, u64) -> isize>,
    pub inject: Option<unsafe extern "C" fn(*mut fid_ep, *const c_void, usize, fi_addr_t, u64, u64, c_int, c_int) -> isize>,
    pub readwrite: Unused,
    pub readwritev: Unused,
    #[allow(clippy::type_complexity)]
    pub readwritemsg: Option<unsafe extern "C" fn(*mut fid_ep, *const fi_msg_atomic, *mut fi_ioc, *mut *mut c_void, usize, u64) -> isize>,
    pub compwrite: Unused,
    pub compwritev: Unused,
    #[allow(clippy::type_complexity)]
    pub compwritemsg: Option<
        unsafe extern "C" fn(
            *mut fid_ep,
            *const fi_msg_atomic,
            *const fi_ioc,
            *mut *mut c_void,
            usize,
            *mut fi_ioc,
            *mut *mut c_void,
            usize,
            u64,
        ) -> isize,
    >,
    pub writevalid: Option<AtomicValid>,
    pub readwritevalid: Option<AtomicValid>,
    pub compwritevalid: Option<AtomicValid>,
}

#[repr(C)]
pub struct fi_cq_err_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: usize,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
    pub olen: usize,
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: *mut c_void,
    pub err_data_size: usize,
}

#[repr(C)]
pub struct fi_ops_cq {
    pub size: usize,
    pub read: Option<unsafe extern "C" fn(*mut fid_cq, *mut c_void, usize) -> isize>,
    pub readfrom: Unused,
    pub readerr: Option<unsafe extern "C" fn(*mut fid_cq, *mut fi_cq_err_entry, u64) -> isize>,
    pub sread: Unused,
    pub sreadfrom: Unused,
    pub signal: Unused,
    pub strerror: Option<unsafe extern "C" fn(*mut fid_cq, c_int, *const c_void, *mut c_char, usize) -> *const c_char>,
}

#[repr(C)]
pub struct fid_cq {
    pub fid: fid,
    pub ops: *mut fi_ops_cq,
}

#[repr(C)]
pub struct fi_ops_cntr {
    pub size: usize,
    pub read: Option<unsafe extern "C" fn(*mut fid_cntr) -> u64>,
    pub readerr: Option<unsafe extern "C" fn(*mut fid_cntr) -> u64>,
    pub add: Unused,
    pub set: Unused,
    pub wait: Option<unsafe extern "C" fn(*mut fid_cntr, u64, c_int) -> c_int>,
    pub adderr: Unused,
    pub seterr: Unused,
}

#[repr(C)]
pub struct fid_cntr {
    pub fid: fid,
    pub ops: *mut fi_ops_cntr,
}

/// The member `$op` of the ops table `$ops` (a `*mut $ty`), checked the way the headers'
/// `FI_CHECK_OP` does: the table exists, its leading `size` covers the member, and the member
/// is set. Evaluates to `Result<fn, String>`; the error names the table and member.
/// The caller must pass a pointer that is NULL or points to a live ops table.
macro_rules! has_op {
    ($ops:expr, $ty:ident, $op:ident) => {{
        let ops: *const $crate::transport::fabric::sys::$ty = $ops;
        // SAFETY: the caller passes NULL or a provider's ops table, which lives as long as the
        // object it belongs to; `size` is read first and bounds every member read after it.
        #[allow(unused_unsafe)]
        let table = unsafe { ops.as_ref() };
        match table {
            Some(t) if t.size >= ::std::mem::offset_of!($crate::transport::fabric::sys::$ty, $op) + ::std::mem::size_of::<usize>() => {
                t.$op.ok_or(concat!(stringify!($ty), ".", stringify!($op), " is not provided"))
            }
            _ => Err(concat!(stringify!($ty), ".", stringify!($op), " is not provided (ops table too old)")),
        }
    }};
}
pub(crate) use has_op;

pub type GetinfoFn = unsafe extern "C" fn(u32, *const c_char, *const c_char, u64, *const fi_info, *mut *mut fi_info) -> c_int;
pub type FreeinfoFn = unsafe extern "C" fn(*mut fi_info);
pub type DupinfoFn = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
pub type FabricFn = unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
pub type StrerrorFn = unsafe extern "C" fn(c_int) -> *const c_char;
pub type VersionFn = unsafe extern "C" fn() -> u32;

/// The libfabric entry points resolved from `libfabric.so.1`, pinned to the symbol versions
/// whose layouts this module mirrors.
pub struct Lib {
    pub getinfo: GetinfoFn,
    pub freeinfo: FreeinfoFn,
    pub dupinfo: DupinfoFn,
    pub fabric: FabricFn,
    pub strerror: StrerrorFn,
    pub version: VersionFn,
}

impl Lib {
    /// `fi_strerror` of a (positive or negative) libfabric error code.
    pub fn strerror(&self, err: c_int) -> String {
        // SAFETY: fi_strerror returns a static NUL-terminated string for any code.
        let p = unsafe { (self.strerror)(err.abs()) };
        if p.is_null() {
            format!("libfabric error {}", err.abs())
        } else {
            // SAFETY: non-NULL, NUL-terminated, static.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    }

    /// The version of the loaded library, as (major, minor).
    pub fn loaded_version(&self) -> (u32, u32) {
        // SAFETY: fi_version takes nothing and returns a number.
        let v = unsafe { (self.version)() };
        (v >> 16, v & 0xffff)
    }
}

/// The loaded library, loaded once per process and never closed; `Err` says why it cannot be
/// used (not installed: the dlerror text; too old: the missing symbol version).
pub fn lib() -> Result<&'static Lib, String> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a thread-local NUL-terminated string.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-NULL and NUL-terminated (above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Provider parameters this library sets where the environment does not (libfabric reads
/// them once, when the first `fi_getinfo` loads the providers):
///
/// - `FI_SOCKETS_PE_WAITTIME=1`: the sockets provider's progress thread (FI_PROGRESS_AUTO)
///   busy-spins for this many milliseconds (default 10) after every piece of work before it
///   blocks in epoll. With several PEs per machine those spinning threads, always runnable,
///   take the cores from the threads that have work (the scheduler favours threads that sleep
///   and wake, not ones that spin): measured on 2 cores with other load, g and p took 28-38 ms
///   each and whole test programs ran past 80 s at 10. At 0 the thread blocks as soon as it is
///   idle (g 0.55 ms, p 0.2 ms, fetch_add 53 us under the same load), but then the provider
///   (libfabric 1.17) sometimes applied an incoming RMA write at its target twice: a
///   collective's message, already taken and its slot zeroed, came back whole, meant for this
///   PE (docs/PERFORMANCE.md, "Seventh round": 8 of 60 stress runs at 0, none of 30 at 1 and
///   none of 30 at 10, the coverage program taking as long at 1 as at 0).
pub const PROVIDER_DEFAULTS: &[(&str, &str)] = &[("FI_SOCKETS_PE_WAITTIME", "1")];

fn set_provider_defaults() {
    for (k, v) in PROVIDER_DEFAULTS {
        if std::env::var_os(k).is_none() {
            let (k, v) = (std::ffi::CString::new(*k), std::ffi::CString::new(*v));
            if let (Ok(k), Ok(v)) = (k, v) {
                // SAFETY: NUL-terminated strings; runs once, at the first load of libfabric
                // (ishmem init or ishmem-info); overwrite 0 never replaces what the user set.
                // (Another thread of the program reading the environment at this moment is
                // the usual caveat of setenv; the library's own threads do not.)
                unsafe { libc::setenv(k.as_ptr(), v.as_ptr(), 0) };
            }
        }
    }
}

fn load() -> Result<Lib, String> {
    set_provider_defaults();
    // SAFETY: dlopen of a NUL-terminated name; the handle is deliberately leaked (libfabric
    // keeps provider state and threads that must outlive every Fabric).
    let h = unsafe { libc::dlopen(c"libfabric.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(format!("libfabric.so.1 could not be loaded: {}", dlerror_text()));
    }
    let sym = |name: &CStr, ver: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: h is a live handle; name and version are NUL-terminated.
        let p = unsafe { libc::dlvsym(h, name.as_ptr(), ver.as_ptr()) };
        if p.is_null() {
            Err(format!(
                "libfabric.so.1 has no {}@{} ({}): libfabric 1.9 or newer is needed",
                name.to_string_lossy(),
                ver.to_string_lossy(),
                dlerror_text()
            ))
        } else {
            Ok(p)
        }
    };
    use std::mem::transmute;
    // SAFETY: each symbol is the function of that name and version, whose C prototype
    // (fabric.h, fi_errno.h) is the Rust type it is transmuted to.
    unsafe {
        Ok(Lib {
            getinfo: transmute::<*mut c_void, GetinfoFn>(sym(c"fi_getinfo", c"FABRIC_1.3")?),
            freeinfo: transmute::<*mut c_void, FreeinfoFn>(sym(c"fi_freeinfo", c"FABRIC_1.3")?),
            dupinfo: transmute::<*mut c_void, DupinfoFn>(sym(c"fi_dupinfo", c"FABRIC_1.3")?),
            fabric: transmute::<*mut c_void, FabricFn>(sym(c"fi_fabric", c"FABRIC_1.1")?),
            strerror: transmute::<*mut c_void, StrerrorFn>(sym(c"fi_strerror", c"FABRIC_1.0")?),
            version: transmute::<*mut c_void, VersionFn>(sym(c"fi_version", c"FABRIC_1.0")?),
        })
    }
}

#[cfg(test)]
mod layout_tests {
    //! Every mirrored struct and member against the C headers: a C program prints sizeof and
    //! offsetof as the compiler sees them, the test compares with `size_of`/`offset_of!`.
    use super::*;
    use std::mem::{offset_of, size_of};

    macro_rules! layouts {
        ($($ty:ident { $($m:ident $(= $cm:ident)?),* $(,)? })*) => {{
            let mut rust: Vec<(String, usize)> = Vec::new();
            let mut c = String::new();
            $(
                rust.push((stringify!($ty).to_string(), size_of::<$ty>()));
                c += &format!("P(\"{0}\", sizeof(struct {0}));\n", stringify!($ty));
                $(
                    let cname = layouts!(@c $m $(, $cm)?);
                    rust.push((format!("{}.{}", stringify!($ty), cname), offset_of!($ty, $m)));
                    c += &format!("P(\"{0}.{1}\", offsetof(struct {0}, {1}));\n", stringify!($ty), cname);
                )*
            )*
            (rust, c)
        }};
        (@c $m:ident) => { stringify!($m) };
        (@c $m:ident, $cm:ident) => { stringify!($cm) };
    }

    #[test]
    fn layouts_match_c_headers() {
        if !std::path::Path::new("/usr/include/rdma/fabric.h").exists() {
            println!("skipped: /usr/include/rdma/fabric.h not found (libfabric-dev not installed)");
            return;
        }
        let (rust, body) = layouts! {
            fi_tx_attr { caps, mode, op_flags, msg_order, comp_order, inject_size, size, iov_limit, rma_iov_limit, tclass }
            fi_rx_attr { caps, mode, op_flags, msg_order, comp_order, total_buffered_recv, size, iov_limit }
            fi_ep_attr { type_ = type, protocol, protocol_version, max_msg_size, msg_prefix_size, max_order_raw_size,
                max_order_war_size, max_order_waw_size, mem_tag_format, tx_ctx_cnt, rx_ctx_cnt, auth_key_size, auth_key }
            fi_domain_attr { domain, name, threading, control_progress, data_progress, resource_mgmt, av_type, mr_mode,
                mr_key_size, cq_data_size, cq_cnt, ep_cnt, tx_ctx_cnt, rx_ctx_cnt, max_ep_tx_ctx, max_ep_rx_ctx,
                max_ep_stx_ctx, max_ep_srx_ctx, cntr_cnt, mr_iov_limit, caps, mode, auth_key, auth_key_size,
                max_err_data, mr_cnt, tclass }
            fi_fabric_attr { fabric, name, prov_name, prov_version, api_version }
            fi_info { next, caps, mode, addr_format, src_addrlen, dest_addrlen, src_addr, dest_addr, handle, tx_attr,
                rx_attr, ep_attr, domain_attr, fabric_attr, nic }
            fi_ops { size, close, bind, control, ops_open, tostr, ops_set }
            fid { fclass, context, ops }
            fi_ops_fabric { size, domain, passive_ep, eq_open, wait_open, trywait, domain2 }
            fid_fabric { fid, ops, api_version }
            fi_av_attr { type_ = type, rx_ctx_bits, count, ep_per_node, name, map_addr, flags }
            fi_cq_attr { size, flags, format, wait_obj, signaling_vector, wait_cond, wait_set }
            fi_cntr_attr { events, wait_obj, wait_set, flags }
            fi_atomic_attr { count, size }
            fi_ops_domain { size, av_open, cq_open, endpoint, scalable_ep, cntr_open, poll_open, stx_ctx, srx_ctx,
                query_atomic, query_collective, endpoint2 }
            fi_ops_mr { size, reg, regv, regattr }
            fid_domain { fid, ops, mr }
            fi_ops_av { size, insert, insertsvc, insertsym, remove, lookup, straddr, av_set }
            fid_av { fid, ops }
            fid_mr { fid, mem_desc, key }
            fi_ops_cm { size, setname, getname, getpeer, connect, listen, accept, reject, shutdown, join }
            fid_ep { fid, ops, cm, msg, rma, tagged, atomic, collective }
            fi_rma_iov { addr, len, key }
            fi_rma_ioc { addr, count, key }
            fi_ioc { addr, count }
            fi_msg_rma { msg_iov, desc, iov_count, addr, rma_iov, rma_iov_count, context, data }
            fi_msg { msg_iov, desc, iov_count, addr, context, data }
            fi_ops_msg { size, recv, recvv, recvmsg, send, sendv, sendmsg, inject, senddata, injectdata }
            fi_msg_atomic { msg_iov, desc, iov_count, addr, rma_iov, rma_iov_count, datatype, op, context, data }
            fi_ops_rma { size, read, readv, readmsg, write, writev, writemsg, inject, writedata, injectdata }
            fi_ops_atomic { size, write, writev, writemsg, inject, readwrite, readwritev, readwritemsg, compwrite,
                compwritev, compwritemsg, writevalid, readwritevalid, compwritevalid }
            fi_cq_err_entry { op_context, flags, len, buf, data, tag, olen, err, prov_errno, err_data, err_data_size }
            fi_ops_cq { size, read, readfrom, readerr, sread, sreadfrom, signal, strerror }
            fid_cq { fid, ops }
            fi_ops_cntr { size, read, readerr, add, set, wait, adderr, seterr }
            fid_cntr { fid, ops }
        };
        // Constants checked the same way (name = value as the compiler sees it).
        let consts: &[(&str, i128)] = &[
            ("FI_MSG", FI_MSG as i128),
            ("FI_RMA", FI_RMA as i128),
            ("FI_ATOMIC", FI_ATOMIC as i128),
            ("FI_READ", FI_READ as i128),
            ("FI_WRITE", FI_WRITE as i128),
            ("FI_RECV", FI_RECV as i128),
            ("FI_SEND", FI_SEND as i128),
            ("FI_TRANSMIT", FI_TRANSMIT as i128),
            ("FI_REMOTE_READ", FI_REMOTE_READ as i128),
            ("FI_REMOTE_WRITE", FI_REMOTE_WRITE as i128),
            ("FI_FENCE", FI_FENCE as i128),
            ("FI_COMPLETION", FI_COMPLETION as i128),
            ("FI_INJECT", FI_INJECT as i128),
            ("FI_INJECT_COMPLETE", FI_INJECT_COMPLETE as i128),
            ("FI_TRANSMIT_COMPLETE", FI_TRANSMIT_COMPLETE as i128),
            ("FI_DELIVERY_COMPLETE", FI_DELIVERY_COMPLETE as i128),
            ("FI_HMEM", FI_HMEM as i128),
            ("FI_RMA_EVENT", FI_RMA_EVENT as i128),
            ("FI_SELECTIVE_COMPLETION", FI_SELECTIVE_COMPLETION as i128),
            ("FI_CONTEXT", FI_CONTEXT as i128),
            ("FI_CONTEXT2", FI_CONTEXT2 as i128),
            ("FI_ORDER_RAW", FI_ORDER_RAW as i128),
            ("FI_ORDER_WAW", FI_ORDER_WAW as i128),
            ("FI_ORDER_RMA_RAW", FI_ORDER_RMA_RAW as i128),
            ("FI_ORDER_RMA_WAW", FI_ORDER_RMA_WAW as i128),
            ("FI_ORDER_ATOMIC_RAW", FI_ORDER_ATOMIC_RAW as i128),
            ("FI_ORDER_ATOMIC_WAW", FI_ORDER_ATOMIC_WAW as i128),
            ("FI_MR_BASIC", FI_MR_BASIC as i128),
            ("FI_MR_SCALABLE", FI_MR_SCALABLE as i128),
            ("FI_MR_LOCAL", FI_MR_LOCAL as i128),
            ("FI_MR_RAW", FI_MR_RAW as i128),
            ("FI_MR_VIRT_ADDR", FI_MR_VIRT_ADDR as i128),
            ("FI_MR_ALLOCATED", FI_MR_ALLOCATED as i128),
            ("FI_MR_PROV_KEY", FI_MR_PROV_KEY as i128),
            ("FI_MR_MMU_NOTIFY", FI_MR_MMU_NOTIFY as i128),
            ("FI_MR_RMA_EVENT", FI_MR_RMA_EVENT as i128),
            ("FI_MR_ENDPOINT", FI_MR_ENDPOINT as i128),
            ("FI_MR_HMEM", FI_MR_HMEM as i128),
            ("FI_MR_COLLECTIVE", FI_MR_COLLECTIVE as i128),
            ("FI_EP_RDM", FI_EP_RDM as i128),
            ("FI_AV_TABLE", FI_AV_TABLE as i128),
            ("FI_PROGRESS_AUTO", FI_PROGRESS_AUTO as i128),
            ("FI_PROGRESS_MANUAL", FI_PROGRESS_MANUAL as i128),
            ("FI_THREAD_SAFE", FI_THREAD_SAFE as i128),
            ("FI_WAIT_NONE", FI_WAIT_NONE as i128),
            ("FI_WAIT_FD", FI_WAIT_FD as i128),
            ("FI_CQ_FORMAT_CONTEXT", FI_CQ_FORMAT_CONTEXT as i128),
            ("FI_CNTR_EVENTS_COMP", FI_CNTR_EVENTS_COMP as i128),
            ("FI_ENABLE", FI_ENABLE as i128),
            ("FI_GETWAIT", FI_GETWAIT as i128),
            ("FI_INT8", FI_INT8 as i128),
            ("FI_UINT8", FI_UINT8 as i128),
            ("FI_INT16", FI_INT16 as i128),
            ("FI_UINT16", FI_UINT16 as i128),
            ("FI_INT32", FI_INT32 as i128),
            ("FI_UINT32", FI_UINT32 as i128),
            ("FI_INT64", FI_INT64 as i128),
            ("FI_UINT64", FI_UINT64 as i128),
            ("FI_FLOAT", FI_FLOAT as i128),
            ("FI_DOUBLE", FI_DOUBLE as i128),
            ("FI_MIN", FI_MIN as i128),
            ("FI_MAX", FI_MAX as i128),
            ("FI_SUM", FI_SUM as i128),
            ("FI_PROD", FI_PROD as i128),
            ("FI_LOR", FI_LOR as i128),
            ("FI_LAND", FI_LAND as i128),
            ("FI_BOR", FI_BOR as i128),
            ("FI_BAND", FI_BAND as i128),
            ("FI_LXOR", FI_LXOR as i128),
            ("FI_BXOR", FI_BXOR as i128),
            ("FI_ATOMIC_READ", FI_ATOMIC_READ as i128),
            ("FI_ATOMIC_WRITE", FI_ATOMIC_WRITE as i128),
            ("FI_CSWAP", FI_CSWAP as i128),
            ("FI_CSWAP_NE", FI_CSWAP_NE as i128),
            ("FI_CSWAP_LE", FI_CSWAP_LE as i128),
            ("FI_CSWAP_LT", FI_CSWAP_LT as i128),
            ("FI_CSWAP_GE", FI_CSWAP_GE as i128),
            ("FI_CSWAP_GT", FI_CSWAP_GT as i128),
            ("FI_MSWAP", FI_MSWAP as i128),
            ("FI_EAGAIN", FI_EAGAIN as i128),
            ("FI_ENOSYS", FI_ENOSYS as i128),
            ("FI_ENODATA", FI_ENODATA as i128),
            ("FI_EOPNOTSUPP", FI_EOPNOTSUPP as i128),
            ("FI_EOTHER", FI_EOTHER as i128),
            ("FI_EAVAIL", FI_EAVAIL as i128),
            ("FI_ETOOSMALL", FI_ETOOSMALL as i128),
            ("FI_ENOKEY", FI_ENOKEY as i128),
            ("FI_VERSION(1, 17)", fi_version(1, 17) as i128),
        ];
        let mut src = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include <rdma/fabric.h>\n#include <rdma/fi_domain.h>\n\
             #include <rdma/fi_endpoint.h>\n#include <rdma/fi_cm.h>\n#include <rdma/fi_rma.h>\n\
             #include <rdma/fi_atomic.h>\n#include <rdma/fi_eq.h>\n#include <rdma/fi_errno.h>\n\
             #define P(n, v) printf(\"%s %zu\\n\", n, (size_t)(v))\n\
             #define K(n, v) printf(\"%s %lld\\n\", n, (long long)(v))\nint main(void) {\n",
        );
        src += &body;
        for (name, _) in consts {
            src += &format!("K(\"{name}\", {name});\n");
        }
        src += "return 0;\n}\n";

        let dir = std::env::temp_dir().join(format!("ishmem-fabric-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c_file, exe) = (dir.join("layout.c"), dir.join("layout"));
        std::fs::write(&c_file, &src).unwrap();
        let cc = match std::process::Command::new("cc").arg("-o").arg(&exe).arg(&c_file).output() {
            Ok(o) => o,
            Err(e) => {
                println!("skipped: no C compiler (cc: {e})");
                return;
            }
        };
        assert!(cc.status.success(), "cc failed:\n{}", String::from_utf8_lossy(&cc.stderr));
        let out = std::process::Command::new(&exe).output().unwrap();
        assert!(out.status.success());
        let c_out = String::from_utf8(out.stdout).unwrap();
        let _ = std::fs::remove_dir_all(&dir);

        let mut expected: Vec<String> = rust.iter().map(|(n, v)| format!("{n} {v}")).collect();
        expected.extend(consts.iter().map(|(n, v)| format!("{n} {v}")));
        let got: Vec<&str> = c_out.lines().collect();
        assert_eq!(got.len(), expected.len());
        let bad: Vec<String> =
            expected.iter().zip(&got).filter(|(e, g)| e.as_str() != **g).map(|(e, g)| format!("rust {e} / C {g}")).collect();
        assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
        println!("{} sizes, offsets and constants match the C headers", expected.len());
    }
}
