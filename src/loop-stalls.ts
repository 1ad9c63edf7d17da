/**
 * Time this process's event loop spent blocked in SQLite's COMMIT: its writes to the log, now and
 * then a WAL checkpoint (which syncs), and the log's sync where the store cannot do it off the
 * loop (src/store/sqlite/wal-sync.ts). That time is a stall, not a queue of requests: requests
 * that waited through it would not have been answered sooner had fewer been waiting, and shedding
 * them would not shorten the next sync (load shedding counts a request's wait from when it is read, so a stall is not counted
 * there either: src/http/pipeline/admission.ts). A process-wide counter: it describes this process's own
 * event loop, nothing another instance needs.
 */
let stalledMs = 0

/** Adds `ms` of blocking sync (the store, after a COMMIT). */
export function addLoopStall (ms: number): void {
  stalledMs += ms
}

/** Milliseconds of blocking sync since the process started. */
export function loopStalledMs (): number {
  return stalledMs
}
