import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pino from 'pino'
import { JobRunner, type LeasedJob, type PolledJob } from '../../src/jobs/job.ts'
import type { HeldLease } from '../../src/jobs/lease.ts'
import { until } from '../support/poll.ts'

const log = pino({ level: process.env.TEST_LOG ?? 'silent' })

/** What the runner did with a leased job's units, as the job saw it. */
interface Seen {
  claimed: number
  renewals: Date[]
  handedBack: number
  failed: unknown[]
  lost: number
  stopped: boolean
}

/**
 * A leased job over one unit (`'u'`), claimed once: `run` is the test's, `renew` answers `held`
 * while `holds()` says so.
 */
function leasedJob (run: (held: HeldLease) => Promise<void>, opts: { ms?: number, holds?: () => boolean } = {}): { job: LeasedJob<string>, seen: Seen } {
  const seen: Seen = { claimed: 0, renewals: [], handedBack: 0, failed: [], lost: 0, stopped: false }
  const job: LeasedJob<string> = {
    name: 'units',
    pollMs: 60_000,
    lease: {
      ms: opts.ms ?? 150,
      renew: async (_unit, until) => {
        seen.renewals.push(until)
        return opts.holds?.() ?? true
      },
      handBack: async () => { seen.handedBack++ },
      failed: async (_unit, err) => { seen.failed.push(err) },
      lost: () => { seen.lost++ },
    },
    claim: async () => seen.claimed++ === 0 ? 'u' : null,
    run: async (_unit, held) => { await run(held) },
    stop: async () => { seen.stopped = true },
  }
  return { job, seen }
}

/** Resolves when `held` fires (the app closing, or the lease lost). */
async function stopped (held: HeldLease): Promise<void> {
  await new Promise<void>(resolve => { held.signal.addEventListener('abort', () => { resolve() }, { once: true }) })
}

describe('JobRunner: a leased job', () => {
  it('renews a unit\'s lease every third of it while the unit runs, each time to a lease\'s length ahead', async () => {
    let release = () => {}
    const done = new Promise<void>(resolve => { release = resolve })
    const { job, seen } = leasedJob(async () => { await done }, { ms: 150 })
    const runner = new JobRunner(log)
    runner.add(job)
    await runner.start()
    try {
      await until(() => seen.renewals.length >= 3, 'three renewals')
      const asked = seen.renewals[0]!.getTime() - Date.now()
      assert.ok(asked <= 150, `renewed to at most a lease ahead (${asked} ms)`)
    } finally {
      release()
      await runner.stop()
    }
    const after = seen.renewals.length
    assert.deepEqual([seen.handedBack, seen.failed.length, seen.lost], [0, 0, 0], 'a run that ended is neither handed back nor failed')
    await new Promise(resolve => setImmediate(resolve))
    assert.equal(seen.renewals.length, after, 'no renewal after the run ended')
  })

  it('stops a run whose lease a renewal found lost, and neither hands the unit back nor fails it', async () => {
    let holds = true
    const { job, seen } = leasedJob(async held => {
      holds = false
      await stopped(held)
      held.throwIfLost()
    }, { ms: 60, holds: () => holds })
    const runner = new JobRunner(log)
    runner.add(job)
    await runner.start()
    try {
      await until(() => seen.lost === 1, 'the lost lease')
    } finally {
      await runner.stop()
    }
    assert.deepEqual([seen.handedBack, seen.failed.length], [0, 0])
  })

  it('hands the unit back when the app closes during its run, then calls the job\'s stop', async () => {
    let running = false
    const { job, seen } = leasedJob(async held => {
      running = true
      await stopped(held)
      held.signal.throwIfAborted()
    }, { ms: 60_000 })
    const runner = new JobRunner(log)
    runner.add(job)
    await runner.start()
    await until(() => running, 'the run')
    await runner.stop()
    assert.deepEqual([seen.handedBack, seen.failed.length, seen.lost, seen.stopped], [1, 0, 0, true])
  })

  it('gives a run that throws to the job\'s `failed`, with the error', async () => {
    const boom = new Error('the disk is on fire')
    const { job, seen } = leasedJob(async () => { throw boom })
    const runner = new JobRunner(log)
    runner.add(job)
    await runner.start()
    try {
      await until(() => seen.failed.length === 1, 'the failure')
    } finally {
      await runner.stop()
    }
    assert.equal(seen.failed[0], boom)
    assert.equal(seen.handedBack, 0)
  })
})

describe('JobRunner: where jobs run, and what wakes them', () => {
  function polled (name: string, runsOn?: 'instance'): PolledJob & { ticks: number, woken: () => void } {
    const job = {
      name,
      pollMs: 60_000,
      ticks: 0,
      woken: () => {},
      ...(runsOn === undefined ? {} : { runsOn }),
      start (wake: () => void) { job.woken = wake },
      async tick () { job.ticks++; return false },
    }
    return job
  }

  it('without background work (BACKGROUND_WORK=false) runs only the jobs of the instance; a wake of another does nothing', async () => {
    const shared = polled('shared')
    const own = polled('own', 'instance')
    const runner = new JobRunner(log, false)
    runner.add(shared)
    runner.add(own)
    await runner.start()
    try {
      await until(() => own.ticks === 1, 'the instance\'s job')
      runner.wake('shared')
      runner.wake('own')
      await until(() => own.ticks === 2, 'the woken instance\'s job')
      assert.equal(shared.ticks, 0)
    } finally {
      await runner.stop()
    }
  })

  it('wakes a job by name, or by what its `start` subscribed to; refuses a name no job has', async () => {
    const job = polled('woken')
    const runner = new JobRunner(log)
    runner.add(job)
    assert.throws(() => { runner.add(polled('woken')) }, /two jobs are named woken/)
    assert.throws(() => { runner.wake('nobody') }, /no job is named nobody/)
    await runner.start()
    try {
      await until(() => job.ticks === 1, 'the first step')
      runner.wake('woken')
      await until(() => job.ticks === 2, 'the step a wake by name asked for')
      job.woken()
      await until(() => job.ticks === 3, 'the step its own signal asked for')
    } finally {
      await runner.stop()
    }
  })
})
