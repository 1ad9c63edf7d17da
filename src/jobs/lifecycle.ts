/**
 * What a part's services do at the app's close, declared when they are made (the composition
 * root) and run by the app: `closing` before it stops accepting (open streams would hold the
 * close), `closed` after every request ended and every job stopped. Work to start is a job
 * (src/jobs/job.ts), never a turn here.
 */
export class Lifecycle {
  readonly closing: Array<() => Promise<void>> = []
  readonly closed: Array<() => Promise<void>> = []

  onClosing (fn: () => Promise<void>): void { this.closing.push(fn) }
  onClosed (fn: () => Promise<void>): void { this.closed.push(fn) }
}
