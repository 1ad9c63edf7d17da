import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AdmissionQueue } from '../../../src/http/pipeline/admission.ts'

/**
 * The admission queue driven by a clock and by turns of a loop the test runs itself: what it
 * serves, what it sheds and when, with no timing of real work. Target 200 ms, interval 100 ms,
 * slice 5 ms.
 */
function harness (opts: { workMs?: number, afterAwait?: boolean } = {}) {
  let t = 0
  let stalled = 0
  const ends: (() => void)[] = []
  const log: string[] = []
  const gone = new Set<string>()
  // With afterAwait, a request's work runs after the callback that started it returns (as the
  // promise callbacks of its hooks and handler do): the queue cannot time it as it starts it.
  const later: (() => void)[] = []
  const settle = () => { for (const fn of later.splice(0)) fn() }
  const q = new AdmissionQueue<string>(
    { targetMs: 200, intervalMs: 100, sliceMs: 5, now: () => t, endOfTurn: fn => { ends.push(fn) }, stalledMs: () => stalled },
    id => {
      log.push(`serve ${id}`)
      if (opts.afterAwait === true) later.push(() => { t += opts.workMs ?? 0 })
      else t += opts.workMs ?? 0
    },
    id => { log.push(`shed ${id}`) },
    id => gone.has(id)
  )
  return {
    q,
    log,
    gone,
    served: () => log.filter(l => l.startsWith('serve')).length,
    shed: () => log.filter(l => l.startsWith('shed')).length,
    advance: (ms: number) => { t += ms },
    /** A disk sync that blocks the loop for `ms` (a COMMIT), counted as src/loop-stalls.ts counts it. */
    sync: (ms: number) => {
      t += ms
      stalled += ms
    },
    /** A request read from a socket: offered, then its started work runs, as after a read callback. */
    read: (id: string) => {
      q.offer(id)
      settle()
    },
    /** The end of the current turn of the loop: what it armed runs, as setImmediate's callbacks would, each followed by the work it started. */
    turn: () => {
      for (const fn of ends.splice(0)) {
        fn()
        settle()
      }
    },
  }
}

describe('the admission queue', () => {
  it('starts a request at once when nothing waits and the turn has served less than its slice', () => {
    const h = harness({ workMs: 2 })
    h.q.offer('a')
    h.q.offer('b')
    h.q.offer('c')
    assert.deepEqual(h.log, ['serve a', 'serve b', 'serve c'], 'served as they were read: 4 ms of work, under the 5 ms slice, before c')
    h.q.offer('d')
    assert.equal(h.log.length, 3, 'd, read after 6 ms of work this turn, waits for the next')
    assert.equal(h.q.length, 1)
    h.turn()
    assert.equal(h.log.at(-1), 'serve d')
  })

  it('serves its slice per turn, at least one request, and lets the loop poll between slices', () => {
    const h = harness({ workMs: 2 })
    h.advance(10)
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) h.q.offer(id)
    assert.deepEqual(h.log, ['serve a', 'serve b', 'serve c'])
    h.turn()
    assert.deepEqual(h.log.slice(3), ['serve d', 'serve e', 'serve f'], 'a turn: 6 ms of work, the first request past the 5 ms slice ends it')
    h.turn()
    assert.deepEqual(h.log.slice(6), ['serve g'])
    assert.equal(h.q.length, 0)
    const heavy = harness({ workMs: 50 })
    for (const id of ['a', 'b', 'c']) heavy.q.offer(id)
    heavy.turn()
    assert.deepEqual(heavy.log, ['serve a', 'serve b'], 'one request at once, one per turn after: the queue always moves')
  })

  it('starts no more than a slice of requests a turn, at their measured cost, even when they do their work after an await', () => {
    // 20 ms a request, all of it after the request's first await: the queue sees ~0 ms as it
    // starts one. A step that started requests while the clock said the slice had room would
    // start the whole queue in one turn (and its work would then run as one block of the loop).
    const h = harness({ workMs: 20, afterAwait: true })
    h.advance(10)
    for (let i = 0; i < 9; i++) h.read(`r${i}`)
    assert.deepEqual(h.log, ['serve r0'], 'the first at once; its 20 ms of work spends the turn')
    const perTurn: number[] = []
    while (h.q.length > 0) {
      const before = h.served()
      h.turn()
      perTurn.push(h.served() - before)
    }
    assert.deepEqual(perTurn, Array(8).fill(1), 'one request a turn: 20 ms of work against a 5 ms slice, none waiting past the target')
    assert.equal(h.shed(), 0)
    // Cheap requests (1 ms, after their await) are started several at a step, as many as the
    // slice's rest holds at their measured cost: 5 a turn, never more.
    const cheap = harness({ workMs: 1, afterAwait: true })
    cheap.advance(10)
    for (let i = 0; i < 40; i++) cheap.read(`r${i}`)
    const cheapTurns: number[] = []
    while (cheap.q.length > 0) {
      const before = cheap.served()
      cheap.turn()
      cheapTurns.push(cheap.served() - before)
    }
    assert.ok(cheapTurns.every(n => n >= 1 && n <= 5), `at most a slice's worth a turn: ${cheapTurns.join(',')}`)
    assert.ok(cheapTurns.length <= 9, `and the slice is used: ${cheapTurns.join(',')}`)
  })

  it('after a disk sync blocked the loop, the next turn serves twice the sync, from the slice up to 16 ms', () => {
    // 2 ms a request: a 5 ms slice serves 3; twice a 3.1 ms sync, 6.2 ms, serves 4; twice 20 ms is capped at 16: 8.
    for (const [syncMs, served] of [[0, 3], [2.4, 3], [3.1, 4], [6, 6], [7.5, 8], [20, 8]] as const) {
      const h = harness({ workMs: 2 })
      h.advance(10)
      for (let i = 0; i < 20; i++) h.q.offer(`r${i}`)
      h.sync(syncMs)
      h.turn()
      const before = h.served()
      h.turn()
      assert.equal(h.served() - before, served, `a turn after a ${syncMs} ms sync`)
      h.turn()
      const after = h.served()
      h.turn()
      assert.equal(h.served() - after, 3, 'the turn after a turn without a sync is back to the slice')
    }
  })

  it('while connections are being accepted, turns only accept and read, serving a slice every slice', () => {
    // libuv takes one connection from the kernel's accept queue per turn of the loop: turns that
    // each served a request accepted one connection per request, and the backlog waited in the
    // kernel, unseen. Turns that accept serve nothing until a slice has passed since the last.
    const h = harness({ workMs: 10 })
    h.q.accepted()
    h.q.offer('a')
    assert.deepEqual(h.log, [], 'a request read in a turn that accepted a connection waits')
    h.turn()
    assert.deepEqual(h.log, ['serve a'], 'nothing served for longer than a slice: this turn serves')
    for (let i = 0; i < 5; i++) {
      h.advance(0.1)
      h.q.accepted()
      h.q.offer(`n${i}`)
      h.turn()
    }
    assert.deepEqual(h.log, ['serve a'], 'five short turns that each accepted a connection, within the slice after a served one')
    h.advance(5)
    h.q.accepted()
    h.turn()
    assert.deepEqual(h.log.slice(1), ['serve n0'], 'a slice after the last served: one served (10 ms of work)')
    h.turn()
    h.turn()
    assert.deepEqual(h.log.slice(2), ['serve n1'], 'no accept for a turn: the queue is served again')
  })

  it('serves every request behind one stall: their sojourn starts when they are read', () => {
    const h = harness()
    h.advance(1000)
    // Twelve requests read in the turn after the loop was held 600 ms (a fuzzer's slow request).
    for (let i = 0; i < 12; i++) h.q.offer(`r${i}`)
    h.advance(3)
    h.turn()
    assert.equal(h.served(), 12)
    assert.equal(h.q.shedding, false)
  })

  it('sheds once sojourns have stood over the target for the interval, then what waited over it, until nothing is shed for the interval', () => {
    const h = harness({ workMs: 10 })
    h.q.offer('first')
    for (let i = 0; i < 40; i++) h.q.offer(`r${i}`)
    // One 10 ms request per turn: r<k> is served after (k + 1) × 10 ms in the queue.
    for (let i = 0; i < 31; i++) h.turn()
    assert.equal(h.log.at(-1), 'serve r30', 'r30 waited 300 ms: sojourns over the target since r21, 90 ms before')
    assert.equal(h.shed(), 0)
    h.turn()
    assert.deepEqual(h.log.slice(-9), ['shed r31', 'shed r32', 'shed r33', 'shed r34', 'shed r35', 'shed r36', 'shed r37', 'shed r38', 'shed r39'],
      '100 ms over the target: overload, and all that waited over it is shed at once, taking none of the slice')
    assert.equal(h.q.length, 0)
    assert.equal(h.q.shedding, true)
    h.q.offer('fresh')
    h.turn()
    assert.equal(h.log.at(-1), 'serve fresh', 'a request within the target is served')
    assert.equal(h.q.shedding, true, 'but the overload goes on: a request was shed less than the interval ago')
    h.advance(100)
    h.q.offer('later')
    assert.equal(h.log.at(-1), 'serve later')
    assert.equal(h.q.shedding, false, 'nothing shed for the interval: the overload is over')
  })

  it('never sheds requests that wait just under the target, however long that lasts', () => {
    const h = harness()
    // Each request waits in the queue for a turn 200 ms long (read in a turn that accepted its
    // connection, so it is queued, not started at once).
    const wait = (id: string, ms: number) => {
      h.q.accepted()
      h.q.offer(id)
      h.advance(ms)
      h.turn()
    }
    for (let i = 0; i < 1000; i++) wait(`r${i}`, 200)
    assert.equal(h.shed(), 0)
    assert.equal(h.served(), 1000)
    // Just over the target, for longer than the interval: shed.
    for (let i = 0; i < 3; i++) wait(`s${i}`, 201)
    assert.deepEqual(h.log.slice(-3), ['serve s0', 'shed s1', 'shed s2'])
  })

  it('forgets requests whose clients went away while they waited, without serving or shedding them', () => {
    const h = harness({ workMs: 6 })
    h.q.offer('a')
    h.q.offer('b')
    h.q.offer('c')
    h.gone.add('b')
    h.turn()
    h.turn()
    assert.deepEqual(h.log, ['serve a', 'serve c'])
    assert.equal(h.q.length, 0)
  })
})

describe('the admission queue on the real event loop', () => {
  it('finishes each request it starts from the queue, its promise callbacks included, before it starts the next', async () => {
    // A request's work goes on after its first await; started several to one callback, their
    // awaits interleaved and every one finished at the end of the lot.
    const log: string[] = []
    const work = async (id: string) => {
      log.push(`start ${id}`)
      for (let i = 0; i < 3; i++) await Promise.resolve()
      log.push(`end ${id}`)
    }
    const q = new AdmissionQueue<string>({ targetMs: 200, now: () => 0 }, id => { work(id).catch(() => {}) }, id => { log.push(`shed ${id}`) })
    // Read in a turn that accepted a connection: queued, not started as they are read.
    q.accepted()
    for (const id of ['a', 'b', 'c']) q.offer(id)
    assert.deepEqual(log, [])
    await new Promise(resolve => { setImmediate(resolve) })
    await new Promise(resolve => { setImmediate(resolve) })
    assert.deepEqual(log, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c'])
  })
})

describe('the admission queue while shedding', () => {
  it('sheds a request at once when the work queued ahead of it already exceeds the target', () => {
    const h = harness({ workMs: 10 })
    h.q.offer('first')
    for (let i = 0; i < 40; i++) h.q.offer(`r${i}`)
    for (let i = 0; i < 32; i++) h.turn()
    assert.equal(h.q.shedding, true)
    // Requests of ~10 ms read while shedding are queued until the work ahead of the next exceeds
    // the 200 ms target; that one is answered 503 as it is read, not once it has waited.
    h.q.accepted()
    const shedBefore = h.shed()
    let i = 0
    while (h.shed() === shedBefore && i < 100) h.q.offer(`q${i++}`)
    assert.equal(h.log.at(-1), `shed q${i - 1}`)
    assert.ok(h.q.length >= 20 && h.q.length <= 30, `shed at once behind ${h.q.length} queued`)
  })
})
