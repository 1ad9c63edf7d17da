import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AdmissionQueue } from '../../src/http/admission.ts'

/**
 * The admission queue driven by a clock and by turns of a loop the test runs itself: what it
 * serves, what it sheds and when, with no timing of real work.
 */
function harness (opts: { workMs?: number } = {}) {
  let t = 0
  const ends: (() => void)[] = []
  const log: string[] = []
  const gone = new Set<string>()
  const q = new AdmissionQueue<string>(
    { maxWaitMs: 500, intervalMs: 100, targetMs: 100, sliceMs: 5, now: () => t, endOfTurn: fn => { ends.push(fn) } },
    id => {
      log.push(`serve ${id}`)
      t += opts.workMs ?? 0
    },
    id => { log.push(`shed ${id}`) },
    id => gone.has(id)
  )
  return {
    q,
    log,
    gone,
    advance: (ms: number) => { t += ms },
    /** The end of the current turn of the loop: what it armed runs, as setImmediate's callbacks would. */
    turn: () => { for (const fn of ends.splice(0)) fn() },
  }
}

describe('the admission queue', () => {
  it('starts a request at once when nothing waits and the turn has served less than its slice', () => {
    const h = harness({ workMs: 2 })
    h.q.offer('a', 0)
    h.q.offer('b', 0)
    h.q.offer('c', 0)
    assert.deepEqual(h.log, ['serve a', 'serve b', 'serve c'], 'served as they were read: 4 ms of work, under the 5 ms slice, before c')
    h.q.offer('d', 0)
    assert.deepEqual(h.log.length, 3, 'd, read after 6 ms of work this turn, waits for the next')
    assert.equal(h.q.length, 1)
    h.turn()
    assert.deepEqual(h.log.at(-1), 'serve d')
  })

  it('serves its slice per turn and lets the loop poll between slices', () => {
    const h = harness({ workMs: 2 })
    h.advance(10)
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) h.q.offer(id, 0)
    // a, b, c at once (0, 2, 4 ms into the turn); the rest queued.
    assert.deepEqual(h.log, ['serve a', 'serve b', 'serve c'])
    h.turn()
    assert.deepEqual(h.log, ['serve a', 'serve b', 'serve c', 'serve d'], 'the turn had spent its slice: one more, so the queue moves')
    h.turn()
    assert.deepEqual(h.log.slice(4), ['serve e', 'serve f', 'serve g'], 'a new turn: 5 ms of work, then one past it ends the queue')
    assert.equal(h.q.length, 0)
  })

  it('gives the queue four times what the loop spent between its shares, when that is more than the slice', () => {
    const h = harness({ workMs: 5 })
    h.advance(10)
    for (let i = 0; i < 30; i++) h.q.offer(`r${i}`, 0)
    h.turn()
    const first = h.log.length
    // The loop then reads its sockets for 10 ms before the next share: that share is 40 ms.
    h.advance(10)
    h.turn()
    assert.equal(h.log.length - first, 8, h.log.slice(first).join(', '))
    // A turn that spent nothing between shares gets the slice: one request of 5 ms.
    h.turn()
    assert.equal(h.log.length - first, 9)
  })

  it('serves every request behind one stall, though each waited more than the bound', () => {
    const h = harness()
    h.advance(1000)
    // Twelve requests read after the loop was held 600 ms by one of them (a fuzzer's slow request).
    for (let i = 0; i < 12; i++) h.q.offer(`r${i}`, 600)
    h.advance(3)
    h.turn()
    assert.equal(h.log.filter(l => l.startsWith('serve')).length, 12)
    assert.equal(h.q.shedding, false)
  })

  it('sheds once waits have stood over the bound for the interval, then sheds all that waited more than the target', () => {
    const h = harness()
    // An open loop beyond capacity: each request read has waited longer than the one before.
    // Each read in a turn of its own.
    h.q.offer('a', 510)
    h.turn()
    h.advance(60)
    h.q.offer('b', 560)
    h.turn()
    h.advance(39)
    h.q.offer('c', 600)
    h.turn()
    assert.deepEqual(h.log, ['serve a', 'serve b', 'serve c'], 'over the bound for 99 ms: still served')
    h.advance(1)
    h.q.offer('d', 600)
    h.turn()
    assert.equal(h.log.at(-1), 'shed d', 'over the bound for 100 ms: overload')
    assert.equal(h.q.shedding, true)
    h.q.offer('e', 101)
    h.turn()
    assert.equal(h.log.at(-1), 'shed e', 'while shedding, anything that waited more than the target is shed')
    h.q.offer('f', 100)
    h.turn()
    assert.equal(h.log.at(-1), 'serve f', 'a request that waited the target or less ends it')
    assert.equal(h.q.shedding, false)
    h.advance(998)
    h.q.offer('g', 250)
    h.turn()
    assert.equal(h.log.at(-1), 'serve g', 'half the bound within 10 intervals of the end: served')
    h.advance(1)
    h.q.offer('h', 251)
    h.turn()
    assert.equal(h.log.at(-1), 'shed h', 'over half the bound within 10 intervals of the end: the overload goes on')
    h.q.offer('h2', 50)
    h.turn()
    h.advance(1000)
    h.q.offer('i', 400)
    h.turn()
    assert.equal(h.log.at(-1), 'serve i', 'ten intervals later, under the bound: served')
  })

  it('never sheds a closed loop whose requests wait just under the bound, however long it lasts', () => {
    const h = harness()
    for (let i = 0; i < 1000; i++) {
      h.advance(10)
      h.q.offer(`r${i}`, 500)
      h.turn()
    }
    assert.equal(h.log.filter(l => l.startsWith('shed')).length, 0)
    // Just over the bound, for longer than the interval: shed.
    for (let i = 0; i < 20; i++) {
      h.advance(10)
      h.q.offer(`s${i}`, 501)
      h.turn()
    }
    assert.ok(h.log.includes('shed s10'), h.log.slice(-20).join(', '))
    assert.ok(!h.log.includes('shed s9'))
  })

  it('forgets requests whose clients went away while they waited, without serving or shedding them', () => {
    const h = harness({ workMs: 6 })
    h.q.offer('a', 0)
    h.q.offer('b', 0)
    h.q.offer('c', 0)
    h.gone.add('b')
    h.turn()
    h.turn()
    assert.deepEqual(h.log, ['serve a', 'serve c'])
    assert.equal(h.q.length, 0)
  })

  it('counts the time in the queue in the wait', () => {
    const h = harness({ workMs: 50 })
    h.q.offer('a', 0)
    for (let i = 0; i < 15; i++) h.q.offer(`r${i}`, 0)
    // One served per turn (50 ms of work each): r<k> has waited 50·k ms when its turn comes.
    for (let i = 0; i < 13; i++) h.turn()
    assert.deepEqual(h.log.slice(-3), ['serve r10', 'serve r11', 'serve r12'], 'at the bound, over it for the first time, 50 ms over it: served')
    h.turn()
    assert.deepEqual(h.log.slice(-2), ['shed r13', 'shed r14'], '100 ms over the bound: shed, and shedding takes none of the slice')
    assert.equal(h.q.length, 0)
  })
})
