import fs from 'node:fs'
import type { AddressInfo } from 'node:net'

/**
 * How many bytes of /proc/net/tcp are read per look: the kernel lists listening sockets first, and
 * the cost of a read grows with what it is asked for (a whole read took ~5 ms on a VM whose table
 * was nearly empty; 4 KiB ~0.7 ms).
 */
const READ_BYTES = 8192

/**
 * The length of a listening socket's accept queue: connections the kernel has completed that the
 * process has not taken yet. libuv takes one per turn of the event loop and says nothing of the
 * rest; Linux shows the count as the listening socket's rx_queue in /proc/net/tcp (tcp6 for an
 * IPv6 socket). There is no Node API for it (getsockopt TCP_INFO would give the same number).
 * Returns `read` (the length now, or undefined when the socket is not in the part of the table it
 * reads) and `close`, or undefined where it cannot be read (not Linux, no /proc): callers then do
 * without it.
 */
export function acceptQueueReader (address: AddressInfo): { read: () => number | undefined, close: () => void } | undefined {
  let fd: number
  try {
    fd = fs.openSync(address.family === 'IPv6' ? '/proc/net/tcp6' : '/proc/net/tcp', 'r')
  } catch {
    return undefined
  }
  const buffer = Buffer.alloc(READ_BYTES)
  const port = address.port.toString(16).toUpperCase().padStart(4, '0')
  // "  sl  local_address rem_address   st tx_queue rx_queue ...": a listener (state 0A) on the port.
  const line = new RegExp(`^ *\\d+: [0-9A-F]+:${port} [0-9A-F]+:0000 0A [0-9A-F]+:([0-9A-F]+) `, 'm')
  return {
    read: () => {
      let read: number
      try {
        read = fs.readSync(fd, buffer, 0, READ_BYTES, 0)
      } catch {
        return undefined
      }
      const found = line.exec(buffer.toString('latin1', 0, read))
      return found === null ? undefined : parseInt(found[1]!, 16)
    },
    close: () => { fs.closeSync(fd) },
  }
}
