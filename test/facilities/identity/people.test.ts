import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { generate } from 'otplib'
import { setupTokenOf } from '../../../src/facilities/identity/index.ts'
import { buildTestApp, freshDatabase, instanceOn, REDIS_URL, redisAvailable, storeKinds, type TestApp, twoInstances } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const PASSWORD = 'correct horse battery staple'
const FAST = { RATE_LIMIT_MAX: '0' }

async function setUp (t: TestApp, email = 'owner@example.com'): Promise<{ access: string, refresh: string, user: any }> {
  const res = await t.request({ method: 'POST', url: '/setup', payload: { token: t.context.services.identity.setupToken, name: 'Olive Owner', email, password: PASSWORD } })
  assert.equal(res.statusCode, 201, res.body)
  const body = res.json()
  return { access: body.access_token, refresh: body.refresh_token, user: body.user }
}

function auth (token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` }
}

for (const kind of await storeKinds()) {
  describe(`people: set-up, sign-in, sessions [${kind}]`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(kind, FAST) })

    it('sets up the owner once; the access token verifies with the JWKS from outside; a second set-up is 409', async () => {
      const wrong = await t.request({ method: 'POST', url: '/setup', payload: { token: 'nope', name: 'X', email: 'x@example.com', password: PASSWORD } })
      assert.equal(wrong.statusCode, 403)
      assert.equal(wrong.json().code, 'SETUP_TOKEN_INVALID')
      const { access, user } = await setUp(t)
      assert.equal(user.role, 'owner')
      assert.equal(user.email, 'owner@example.com')
      const jwks = await t.request({ method: 'GET', url: '/.well-known/jwks.json' })
      assert.equal(jwks.headers['cache-control'], 'public, max-age=300')
      const { payload } = await jwtVerify(access, createLocalJWKSet(jwks.json()), { issuer: t.config.publicBaseUrl })
      assert.equal(payload.sub, user.id)
      assert.equal(typeof payload.sid, 'string')
      assert.equal(payload.exp! - payload.iat!, 900)
      const me = await t.request({ method: 'GET', url: '/users/me', headers: auth(access) })
      assert.equal(me.statusCode, 200)
      assert.equal(me.json().slug, 'olive-owner')
      const again = await t.request({ method: 'POST', url: '/setup', payload: { token: t.context.services.identity.setupToken, name: 'X', email: 'y@example.com', password: PASSWORD } })
      assert.equal(again.statusCode, 409)
      assert.equal(again.json().code, 'ALREADY_SET_UP')
    })

    it('refuses passwords by its rules, each limit from both sides', async () => {
      const owner = await signIn(t, 'owner@example.com')
      const invite = async (email: string) => (await t.request({ method: 'POST', url: '/invitations', headers: auth(owner.access), payload: { email, role: 'author' } })).json().token as string
      const accept = async (password: string) => await t.request({ method: 'POST', url: '/invitations/accept', payload: { token: await invite(`p${Math.random()}@example.com`), name: 'Pat', password } })
      assert.equal((await accept('a'.repeat(11))).json().code, 'PASSWORD_TOO_SHORT')
      assert.equal((await accept('x'.repeat(257))).json().code, 'PASSWORD_TOO_LONG')
      assert.equal((await accept('1qaz2wsx3edc')).json().code, 'PASSWORD_TOO_COMMON')
      assert.equal((await accept('qz'.repeat(6))).statusCode, 201)
      assert.equal((await accept('qz'.repeat(128))).statusCode, 201)
    })

    it('rotates refresh tokens; a spent one presented again ends the session and emits session.reuse_detected', async () => {
      const first = await signIn(t, 'owner@example.com')
      const r1 = await t.request({ method: 'POST', url: '/sessions/refresh', payload: { refresh_token: first.refresh } })
      assert.equal(r1.statusCode, 200, r1.body)
      const second = r1.json()
      assert.notEqual(second.refresh_token, first.refresh)
      assert.equal((await t.request({ method: 'GET', url: '/users/me', headers: auth(second.access_token) })).statusCode, 200)
      const reuse = await t.request({ method: 'POST', url: '/sessions/refresh', payload: { refresh_token: first.refresh } })
      assert.equal(reuse.statusCode, 401)
      assert.equal(reuse.json().code, 'SESSION_REVOKED')
      // The whole session ended: the newer refresh token and its access token too.
      assert.equal((await t.request({ method: 'POST', url: '/sessions/refresh', payload: { refresh_token: second.refresh_token } })).json().code, 'SESSION_REVOKED')
      assert.equal((await t.request({ method: 'GET', url: '/users/me', headers: auth(second.access_token) })).statusCode, 401)
      const events = await t.store.events.list(0, 1000)
      const reused = events.find(e => e.type === 'session.reuse_detected')
      assert.ok(reused)
      assert.equal(JSON.parse(reused.actor!).kind, 'user')
    })

    it('signs in with the cookie: HttpOnly, SameSite=Strict, Path=/sessions; refresh by cookie; sign out ends it', async () => {
      const res = await t.request({ method: 'POST', url: '/sessions', payload: { email: 'owner@example.com', password: PASSWORD, refresh: 'cookie' } })
      assert.equal(res.statusCode, 201)
      assert.equal(res.json().refresh_token, undefined)
      const cookie = String(res.headers['set-cookie'])
      assert.match(cookie, /^blog_refresh=[A-Za-z0-9_-]{43}; Max-Age=\d+; Path=\/sessions; HttpOnly; SameSite=Strict$/)
      const pair = cookie.split(';')[0]!
      const refreshed = await t.request({ method: 'POST', url: '/sessions/refresh', headers: { cookie: pair } })
      assert.equal(refreshed.statusCode, 200, refreshed.body)
      const next = String(refreshed.headers['set-cookie']).split(';')[0]!
      const out = await t.request({ method: 'DELETE', url: '/sessions/current', headers: { ...auth(refreshed.json().access_token), cookie: next } })
      assert.equal(out.statusCode, 204)
      assert.equal((await t.request({ method: 'POST', url: '/sessions/refresh', headers: { cookie: next } })).json().code, 'SESSION_REVOKED')
    })

    it('two-factor: a code is required, a TOTP is refused on second use, a recovery code works once', async () => {
      const s = await signIn(t, 'owner@example.com')
      const begin = await t.request({ method: 'POST', url: '/users/me/two-factor', headers: auth(s.access) })
      assert.equal(begin.statusCode, 201)
      const { secret, otpauth_url: url } = begin.json()
      assert.match(url, /^otpauth:\/\/totp\//)
      const code = await generate({ secret })
      const confirm = await t.request({ method: 'POST', url: '/users/me/two-factor/confirm', headers: auth(s.access), payload: { code } })
      assert.equal(confirm.statusCode, 200, confirm.body)
      const recovery: string[] = confirm.json().recovery_codes
      assert.equal(recovery.length, 10)
      const without = await t.request({ method: 'POST', url: '/sessions', payload: { email: 'owner@example.com', password: PASSWORD } })
      assert.equal(without.json().code, 'CODE_REQUIRED')
      // The code the confirmation used is spent in its window.
      const replay = await t.request({ method: 'POST', url: '/sessions', payload: { email: 'owner@example.com', password: PASSWORD, code } })
      assert.equal(replay.json().code, 'INVALID_CREDENTIALS')
      const viaRecovery = await t.request({ method: 'POST', url: '/sessions', payload: { email: 'owner@example.com', password: PASSWORD, code: recovery[0] } })
      assert.equal(viaRecovery.statusCode, 201)
      const recoveryAgain = await t.request({ method: 'POST', url: '/sessions', payload: { email: 'owner@example.com', password: PASSWORD, code: recovery[0] } })
      assert.equal(recoveryAgain.json().code, 'INVALID_CREDENTIALS')
      const off = await t.request({ method: 'DELETE', url: '/users/me/two-factor', headers: auth(viaRecovery.json().access_token), payload: { code: recovery[1] } })
      assert.equal(off.statusCode, 204, off.body)
    })

    it('throttles an email after 5 failures (429 with Retry-After) and compares no password while throttled', async () => {
      const email = 'owner@example.com'
      await t.store.transaction(async uow => { await uow.identity.clearFailures([`email:${email}`, 'address:127.0.0.1']) })
      for (let i = 0; i < 5; i++) {
        const res = await t.request({ method: 'POST', url: '/sessions', payload: { email, password: `wrong password ${i}` } })
        assert.equal(res.json().code, 'INVALID_CREDENTIALS')
      }
      const throttled = await t.request({ method: 'POST', url: '/sessions', payload: { email, password: PASSWORD } })
      assert.equal(throttled.statusCode, 429)
      assert.equal(throttled.json().code, 'SIGN_IN_THROTTLED')
      assert.ok(Number(throttled.headers['retry-after']) > 0 && Number(throttled.headers['retry-after']) <= 60)
      // Unknown emails answer as wrong passwords do.
      const unknown = await t.request({ method: 'POST', url: '/sessions', payload: { email: 'nobody@example.com', password: PASSWORD } })
      assert.equal(unknown.json().code, 'INVALID_CREDENTIALS')
      await t.store.transaction(async uow => { await uow.identity.clearFailures([`email:${email}`]) })
    })

    it('roles: a contributor is refused what their role lacks (403 ROLE_FORBIDS); editors invite writers only', async () => {
      const owner = await signIn(t, 'owner@example.com')
      const inv = await t.request({ method: 'POST', url: '/invitations', headers: auth(owner.access), payload: { email: 'ed@example.com', role: 'editor' } })
      assert.equal(inv.statusCode, 201)
      assert.match(inv.json().url, /^\/admin\/invite#/)
      const ed = (await t.request({ method: 'POST', url: '/invitations/accept', payload: { token: inv.json().token, name: 'Ed', password: PASSWORD } })).json()
      assert.equal(ed.user.role, 'editor')
      const asAdmin = await t.request({ method: 'POST', url: '/invitations', headers: auth(ed.access_token), payload: { email: 'a2@example.com', role: 'admin' } })
      assert.equal(asAdmin.json().code, 'ROLE_FORBIDS')
      const writer = await t.request({ method: 'POST', url: '/invitations', headers: auth(ed.access_token), payload: { email: 'c@example.com', role: 'contributor' } })
      assert.equal(writer.statusCode, 201)
      const taken = await t.request({ method: 'POST', url: '/invitations', headers: auth(owner.access), payload: { email: 'ed@example.com', role: 'author' } })
      assert.equal(taken.json().code, 'EMAIL_TAKEN')
      const used = await t.request({ method: 'POST', url: '/invitations/accept', payload: { token: inv.json().token, name: 'Ed', password: PASSWORD } })
      assert.equal(used.json().code, 'INVITATION_NOT_FOUND')
      const owned = await t.request({ method: 'PATCH', url: `/users/${owner.user.id}`, headers: { ...auth(ed.access_token), 'content-type': 'application/merge-patch+json' }, payload: { role: 'author' } })
      assert.equal(owned.json().code, 'ROLE_FORBIDS')
      const demote = await t.request({ method: 'PATCH', url: `/users/${owner.user.id}`, headers: { ...auth(owner.access), 'content-type': 'application/merge-patch+json' }, payload: { status: 'suspended' } })
      assert.equal(demote.json().code, 'OWNER_PROTECTED')
    })

    it('a password reset link sets a password once and ends the user\'s sessions', async () => {
      const owner = await signIn(t, 'owner@example.com')
      const ed = await signIn(t, 'ed@example.com')
      const reset = await t.request({ method: 'POST', url: `/users/${ed.user.id}/password-reset`, headers: auth(owner.access) })
      assert.equal(reset.statusCode, 201, reset.body)
      assert.match(reset.json().url, /^\/admin\/reset#/)
      const use = await t.request({ method: 'POST', url: '/password-resets', payload: { token: reset.json().token, password: 'a brand new passphrase' } })
      assert.equal(use.statusCode, 204, use.body)
      assert.equal((await t.request({ method: 'POST', url: '/password-resets', payload: { token: reset.json().token, password: 'a brand new passphrase' } })).json().code, 'RESET_NOT_FOUND')
      assert.equal((await t.request({ method: 'POST', url: '/sessions/refresh', payload: { refresh_token: ed.refresh } })).json().code, 'SESSION_REVOKED')
    })
    it('posts by role: a contributor writes drafts only and leaves published posts alone; an editor sees and publishes them', async () => {
      const owner = await signIn(t, 'owner@example.com')
      const inv = (await t.request({ method: 'POST', url: '/invitations', headers: auth(owner.access), payload: { email: 'cora@example.com', role: 'contributor' } })).json()
      const cora = (await t.request({ method: 'POST', url: '/invitations/accept', payload: { token: inv.token, name: 'Cora', password: PASSWORD } })).json()
      const publish = await t.request({ method: 'POST', url: '/posts', headers: auth(cora.access_token), payload: { title: 'Mine', content: 'Text.', status: 'published' } })
      assert.equal(publish.statusCode, 403)
      assert.equal(publish.json().code, 'ROLE_FORBIDS')
      const draft = await t.request({ method: 'POST', url: '/posts', headers: auth(cora.access_token), payload: { title: 'Mine', content: 'Text.' } })
      assert.equal(draft.statusCode, 201, draft.body)
      assert.equal(draft.json().status, 'draft')
      assert.equal(draft.json().author, 'cora')
      const ed = await signIn(t, 'ed@example.com', 'a brand new passphrase')
      const seen = await t.request({ method: 'GET', url: `/posts/${draft.json().id}`, headers: auth(ed.access) })
      assert.equal(seen.statusCode, 200)
      const published = await t.request({ method: 'PATCH', url: `/posts/${draft.json().id}`, headers: { ...auth(ed.access), 'content-type': 'application/merge-patch+json' }, payload: { status: 'published' } })
      assert.equal(published.statusCode, 200, published.body)
      const edit = await t.request({ method: 'PATCH', url: `/posts/${draft.json().id}`, headers: { ...auth(cora.access_token), 'content-type': 'application/merge-patch+json' }, payload: { title: 'Changed' } })
      assert.equal(edit.json().code, 'ROLE_FORBIDS')
      const events = await t.store.events.list(0, 1000)
      const byEd = events.find(e => e.type === 'post.published')
      assert.deepEqual(JSON.parse(byEd!.actor!), { kind: 'user', id: ed.user.id, name: 'ed' })
    })
  })
}

async function signIn (t: TestApp, email: string, password = PASSWORD): Promise<{ access: string, refresh: string, user: any }> {
  const res = await t.request({ method: 'POST', url: '/sessions', payload: { email, password } })
  assert.equal(res.statusCode, 201, res.body)
  const b = res.json()
  return { access: b.access_token, refresh: b.refresh_token, user: b.user }
}

describe('people across instances', async () => {
  const kinds = await storeKinds()
  it('a suspended user\'s access token is refused on a second instance within a second (PostgreSQL)', { skip: !kinds.includes('postgres') }, async c => {
    const db = await freshDatabase('postgres')
    const a = await instanceOn(db.url, db.dataDir)
    const b = await instanceOn(db.url, db.dataDir)
    c.after(async () => {
      for (const i of [a, b]) await i.app.close()
      for (const i of [a, b]) await i.store.close()
      await db.drop()
    })
    const token = setupTokenOf(await a.store.serverSecret())
    const owner = (await a.app.inject({ method: 'POST', url: '/setup', payload: { token, name: 'Olive', email: 'o@example.com', password: PASSWORD } })).json()
    const inv = (await a.app.inject({ method: 'POST', url: '/invitations', headers: auth(owner.access_token), payload: { email: 'w@example.com', role: 'author' } })).json()
    const writer = (await a.app.inject({ method: 'POST', url: '/invitations/accept', payload: { token: inv.token, name: 'Wren', password: PASSWORD } })).json()
    // Instance b accepts a's token (and remembers it verified).
    assert.equal((await b.app.inject({ method: 'GET', url: '/users/me', headers: auth(writer.access_token) })).statusCode, 200)
    const suspend = await a.app.inject({ method: 'PATCH', url: `/users/${writer.user.id}`, headers: { ...auth(owner.access_token), 'content-type': 'application/merge-patch+json' }, payload: { status: 'suspended' } })
    assert.equal(suspend.statusCode, 200, suspend.body)
    const answered = Date.now()
    let refused = 0
    while (Date.now() - answered < 1000) {
      const res = await b.app.inject({ method: 'GET', url: '/users/me', headers: auth(writer.access_token) })
      if (res.statusCode === 401) { refused = Date.now() - answered; break }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    assert.ok(refused > 0, 'refused on the second instance within a second')
    assert.equal((await b.app.inject({ method: 'POST', url: '/sessions/refresh', payload: { refresh_token: writer.refresh_token } })).json().code, 'SESSION_REVOKED')
    // The throttle holds across instances: failures on a, refused on b.
    for (let i = 0; i < 5; i++) await a.app.inject({ method: 'POST', url: '/sessions', payload: { email: 'o@example.com', password: `wrong password ${i}` } })
    const held = await b.app.inject({ method: 'POST', url: '/sessions', payload: { email: 'o@example.com', password: PASSWORD } })
    assert.equal(held.json().code, 'SIGN_IN_THROTTLED')
  })

  it('the throttle holds across two instances that share Redis for their rate limits (PostgreSQL and Redis)', { skip: !kinds.includes('postgres') || !await redisAvailable() }, async c => {
    const env = { REDIS_URL, REDIS_KEY_PREFIX: `blog-test-${process.pid}-${Date.now()}:`, RATE_LIMIT_MAX: '1000' }
    const { a, b, store } = await twoInstances(c, 'postgres', env)
    const token = setupTokenOf(await store.serverSecret())
    assert.equal((await a.inject({ method: 'POST', url: '/setup', payload: { token, name: 'Olive', email: 'o@example.com', password: PASSWORD } })).statusCode, 201)
    const limit = 5
    // Failures alternate between the instances: each sees only half of them, the throttle all.
    for (let i = 0; i < limit - 1; i++) {
      const res = await (i % 2 === 0 ? a : b).inject({ method: 'POST', url: '/sessions', payload: { email: 'o@example.com', password: `wrong password ${i}` } })
      assert.equal(res.json().code, 'INVALID_CREDENTIALS')
    }
    const under = await b.inject({ method: 'POST', url: '/sessions', payload: { email: 'o@example.com', password: PASSWORD } })
    assert.equal(under.statusCode, 201, 'one failure under the limit: the right password still signs in (and clears the count)')
    for (let i = 0; i < limit; i++) await (i % 2 === 0 ? b : a).inject({ method: 'POST', url: '/sessions', payload: { email: 'o@example.com', password: `wrong again ${i}` } })
    for (const instance of [a, b]) {
      const held = await instance.inject({ method: 'POST', url: '/sessions', payload: { email: 'o@example.com', password: PASSWORD } })
      assert.equal(held.statusCode, 429)
      assert.equal(held.json().code, 'SIGN_IN_THROTTLED')
      assert.ok(Number(held.headers['retry-after']) >= 1)
    }
  })
})
