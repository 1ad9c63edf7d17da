/**
 * What a part's services do at the app's turns, declared when they are made (the composition
 * root) and run by the app: `ready` once it is ready, `closing` before it stops accepting (open
 * streams would hold the close), `closed` after every request ended.
 */
export class Lifecycle {
  readonly ready: Array<() => void | Promise<void>> = []
  readonly closing: Array<() => Promise<void>> = []
  readonly closed: Array<() => Promise<void>> = []

  onReady (fn: () => void | Promise<void>): void { this.ready.push(fn) }
  onClosing (fn: () => Promise<void>): void { this.closing.push(fn) }
  onClosed (fn: () => Promise<void>): void { this.closed.push(fn) }
}
