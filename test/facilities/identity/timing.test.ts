import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { describe, it } from 'node:test'
import { buildTestApp, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

/**
 * A sign-in's answer time does not tell whether an email exists: an unknown email is compared
 * against a decoy hash, as a known one with a wrong password is against its own. Measured in turns
 * in one run (so the machine's load falls on both alike) and compared by medians, as ratios.
 */

const PASSWORD = 'correct horse battery staple'
const ROUNDS = 8
// High limits: the failures measured here are not to be throttled.
const ENV = { RATE_LIMIT_MAX: '0', SIGN_IN_EMAIL_FAILURES: '1000', SIGN_IN_ADDRESS_FAILURES: '100000' }

function median (xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

for (const kind of await storeKinds()) {
  describe(`sign-in timing [${kind}]`, () => {
    let t: TestApp

    /** How long a sign-in takes to answer, in ms, and that it answers `code`. */
    const timed = async (email: string, password: string, code: string): Promise<number> => {
      const started = performance.now()
      const res = await t.request({ method: 'POST', url: '/sessions', payload: { email, password } })
      const ms = performance.now() - started
      assert.equal(res.json().code, code, res.body)
      return ms
    }

    before(async () => {
      t = await buildTestApp(kind, ENV)
      const setup = await t.request({ method: 'POST', url: '/setup', payload: { token: t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: PASSWORD } })
      assert.equal(setup.statusCode, 201, setup.body)
    })

    it('an unknown email takes about as long as a known one with a wrong password', async c => {
      const known = () => timed('olive@example.com', 'not the password at all', 'INVALID_CREDENTIALS')
      const unknown = (i: number) => timed(`nobody-${i}@example.com`, 'not the password at all', 'INVALID_CREDENTIALS')
      // No password compared at all: a body the schema refuses.
      const none = () => timed('not an email', 'not the password at all', 'VALIDATION_FAILED')
      // Warm up: the decoy hash is made at the first unknown email; the routes' first answers are slower.
      await known()
      await unknown(-1)
      await none()
      const knownMs: number[] = []
      const unknownMs: number[] = []
      const noneMs: number[] = []
      for (let i = 0; i < ROUNDS; i++) {
        // In turns, each first every other round.
        if (i % 2 === 0) {
          knownMs.push(await known())
          unknownMs.push(await unknown(i))
        } else {
          unknownMs.push(await unknown(i))
          knownMs.push(await known())
        }
        noneMs.push(await none())
      }
      const k = median(knownMs)
      const u = median(unknownMs)
      const n = median(noneMs)
      const round = (xs: number[]) => xs.map(x => Math.round(x)).join(', ')
      const report = `known ${round(knownMs)} (median ${k.toFixed(1)} ms); unknown ${round(unknownMs)} (median ${u.toFixed(1)} ms); no comparison median ${n.toFixed(1)} ms`
      c.diagnostic(report)
      // The measurement sees a hash comparison at all: without one a sign-in answers far sooner.
      assert.ok(k > 2 * n, `a wrong password takes longer than no comparison: ${report}`)
      assert.ok(u > 2 * n, `an unknown email is compared against a decoy: ${report}`)
      assert.ok(u >= 0.5 * k && u <= 2 * k, `an unknown email's median is within 0.5×–2× a known one's: ${report}`)
    })
  })
}
