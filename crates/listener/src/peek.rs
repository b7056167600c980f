//! Whether a client has sent bytes not read yet, asked of the kernel without waiting and without reading them.
//! The accept loop takes connections in bursts behind a flood of sockets; a connection's own task may not have
//! run since its client spoke, but the kernel knows.

use std::os::fd::RawFd;

/// Whether bytes from the client wait on `socket` (false for a socket that is closed or not a socket).
pub(crate) fn bytes_waiting(socket: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: `recv` writes at most one byte into `byte`, which outlives the call; on a descriptor that is not an
    // open socket it fails without touching memory. MSG_PEEK leaves the byte for the protocol to read, and
    // MSG_DONTWAIT never blocks.
    let peeked = unsafe {
        libc::recv(
            socket,
            (&raw mut byte).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    peeked > 0
}
