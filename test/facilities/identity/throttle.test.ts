import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

/**
 * The sign-in throttle, each limit from both sides: one failure fewer than the limit still lets the
 * right password in; at the limit the right password is refused with 429 SIGN_IN_THROTTLED and
 * Retry-After, and no password is compared for it (`password_verifications_total` does not move).
 * The limits are set low here (SIGN_IN_EMAIL_FAILURES, SIGN_IN_ADDRESS_FAILURES).
 */

const PASSWORD = 'correct horse battery staple'
const ENV = { RATE_LIMIT_MAX: '0', SIGN_IN_EMAIL_FAILURES: '3', SIGN_IN_ADDRESS_FAILURES: '5' }

for (const kind of await storeKinds()) {
  describe(`the sign-in throttle [${kind}]`, () => {
    let t: TestApp
    let emailLimit: number
    let addressLimit: number

    const signIn = async (email: string, password: string, address: string): Promise<LightMyRequestResponse> =>
      await t.request({ method: 'POST', url: '/sessions', remoteAddress: address, payload: { email, password } })
    const verifications = async (): Promise<number> => {
      const found = /^password_verifications_total (\d+)$/m.exec(await t.scrape())
      assert.ok(found, 'password_verifications_total is in /metrics')
      return Number(found[1])
    }
    const fail = async (email: string, address: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const before = await verifications()
        const res = await signIn(email, `wrong password ${i}`, address)
        assert.equal(res.statusCode, 401, res.body)
        assert.equal(res.json().code, 'INVALID_CREDENTIALS')
        assert.equal(await verifications(), before + 1, 'a failed sign-in compares one password')
      }
    }
    /** The right password, refused by the throttle before any password is compared. */
    const refused = async (email: string, address: string) => {
      const before = await verifications()
      const res = await signIn(email, PASSWORD, address)
      assert.equal(res.statusCode, 429, res.body)
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
      assert.equal(res.json().code, 'SIGN_IN_THROTTLED')
      const retry = Number(res.headers['retry-after'])
      assert.ok(Number.isInteger(retry) && retry > 0 && retry <= 60, `Retry-After ${res.headers['retry-after']}`)
      assert.equal(await verifications(), before, 'a throttled attempt compares no password')
    }
    const admitted = async (email: string, address: string) => {
      const before = await verifications()
      const res = await signIn(email, PASSWORD, address)
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(await verifications(), before + 1)
    }

    before(async () => {
      t = await buildTestApp(kind, ENV)
      emailLimit = t.config.identity.emailFailures
      addressLimit = t.config.identity.addressFailures
      assert.ok(emailLimit >= 2 && addressLimit > emailLimit, 'the limits this test is written for')
      const setup = await t.request({ method: 'POST', url: '/setup', payload: { token: t.context.services.identity.setupToken, name: 'Olive', email: 'olive@example.com', password: PASSWORD } })
      assert.equal(setup.statusCode, 201, setup.body)
      const inv = await t.request({ method: 'POST', url: '/invitations', headers: { authorization: `Bearer ${setup.json().access_token}` }, payload: { email: 'wren@example.com', role: 'author' } })
      const wren = await t.request({ method: 'POST', url: '/invitations/accept', payload: { token: inv.json().token, name: 'Wren', password: PASSWORD } })
      assert.equal(wren.statusCode, 201, wren.body)
    })

    it('per email: one failure under the limit lets the right password in; at the limit it is refused, from any address, comparing nothing', async () => {
      await fail('olive@example.com', '10.0.1.1', emailLimit - 1)
      await admitted('olive@example.com', '10.0.1.1')
      // The success cleared the email's count: the limit's worth of failures again, from another address.
      await fail('olive@example.com', '10.0.1.2', emailLimit)
      await refused('olive@example.com', '10.0.1.2')
      await refused('OLIVE@Example.com', '10.0.1.3')
      // Another email from the same address is not held by this email's block.
      await admitted('wren@example.com', '10.0.1.2')
    })

    it('per address: one failure under the limit lets the right password in; at the limit that address is refused, comparing nothing', async () => {
      const address = '10.0.2.1'
      // Unknown emails, each failing once (under the email limit): only the address's count grows.
      for (let i = 0; i < addressLimit - 1; i++) await fail(`nobody-${i}@example.com`, address, 1)
      await admitted('wren@example.com', address)
      // A success does not excuse the address's failures: one more reaches the limit.
      await fail('nobody-last@example.com', address, 1)
      await refused('wren@example.com', address)
      await admitted('wren@example.com', '10.0.2.2')
    })
  })
}
