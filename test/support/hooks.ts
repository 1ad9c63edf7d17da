import { AsyncLocalStorage } from 'node:async_hooks'
import { after, before as nodeBefore, beforeEach as nodeBeforeEach, type HookFn, type TestContext } from 'node:test'

/**
 * How a fixture (an app, a database, a browser) closes itself when what made it ends, so that no
 * test closes one by hand and none can leak one.
 *
 * node:test's `after()` attaches to the test or suite running when it is called: in a test's body,
 * that test (it runs when the test ends); at a file's top level, the file. In a hook it attaches to
 * the hook itself, and runs as soon as the hook returns: a fixture made in `before` would be closed
 * before the suite's first test. So the suites' hooks come from here: `before` (and `beforeEach`)
 * run their function with an owner that `closeWhenDone` hands the close to, closed when that suite
 * (or test) ends, in the reverse order of making. Import `before` and `beforeEach` from this file,
 * not node:test, wherever one makes a fixture: a fixture made in node:test's own `before` is
 * closed when the hook returns and fails the suite, saying so; one made in node:test's own
 * `beforeEach` is closed when that hook returns, and the test finds it closed.
 */
const owners = new AsyncLocalStorage<(close: () => Promise<void>) => void>()

/**
 * Runs `fn` with `owner` as the owner of what it makes. The storage is switched off again once `fn`
 * ends: on Node 20 an enabled AsyncLocalStorage hooks every promise of the process, the service
 * under test included, and the tests would run slower for it.
 */
async function within (owner: (close: () => Promise<void>) => void, fn: () => Promise<void>): Promise<void> {
  try {
    await owners.run(owner, fn)
  } finally {
    owners.disable()
  }
}

/** Calls `close` when the suite, test or file that is making a fixture now ends. */
export function closeWhenDone (close: () => Promise<void>): void {
  const owner = owners.getStore()
  if (owner !== undefined) {
    owner(close)
    return
  }
  after(async (ctx: unknown) => {
    await close()
    // In node:test's own `before` hook, `after` ran when the hook returned, and is handed the suite's context.
    if (typeof (ctx as Partial<TestContext> | undefined)?.after !== 'function') {
      throw new Error('a fixture was made in node:test\'s before hook and closed at its end: import before from test/support/hooks.ts')
    }
  })
}

/** `fn` once, however often it is called: a fixture's close, closed by hand and then again when its owner ends. */
export function once (fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined
  return async () => { await (done ??= fn()) }
}

/**
 * node:test's `before`, for a suite (or the file): the fixtures `fn` makes are closed when the
 * suite ends, after the suite's own `after` hooks (which may still use them), newest first.
 */
export function before (fn: HookFn, options?: Parameters<typeof nodeBefore>[1]): void {
  const owned: Array<() => Promise<void>> = []
  let owner: string | undefined
  // One parameter: node:test takes a function of two for one that calls back.
  nodeBefore(async (ctx) => {
    owner = (ctx as { name?: string }).name
    await within(close => { owned.push(close) }, async () => { await (fn as (c: unknown) => unknown)(ctx) })
  }, options)
  // Registered once the suite's body has run (a microtask of the suite, which node:test counts as
  // the suite's own, as it does a promise's continuation in a test), so that this hook comes after
  // the `after` hooks the body registers; in an async body, after those registered before its
  // first await. Were it ever counted as another's, the check below says so.
  queueMicrotask(() => {
    after(async (ctx: unknown) => {
      for (const close of owned.splice(0).reverse()) await close()
      const closer = (ctx as { name?: string } | undefined)?.name
      if (owner !== undefined && closer !== owner) throw new Error(`the fixtures of "${owner}" were closed when "${String(closer)}" ended, not when their suite did`)
    })
  })
}

/** node:test's `beforeEach`: the fixtures `fn` makes are closed when the test ends. */
export function beforeEach (fn: HookFn, options?: Parameters<typeof nodeBeforeEach>[1]): void {
  nodeBeforeEach(async (ctx) => {
    const t = ctx as TestContext
    await within(close => { t.after(close) }, async () => { await (fn as (c: unknown) => unknown)(ctx) })
  }, options)
}
