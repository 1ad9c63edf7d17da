import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { exportJWK, exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from 'jose'
import { buildTestApp, json, JWT_SECRET, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const secret = new TextEncoder().encode(JWT_SECRET)
const now = () => Math.floor(Date.now() / 1000)
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')

/** Claims of a token that would be accepted, with `extra` laid over them. */
function claims (extra: JWTPayload = {}): JWTPayload {
  return { sub: 'alice', scope: 'posts:write', iat: now(), exp: now() + 3600, ...extra }
}

async function sign (payload: JWTPayload, key: Parameters<SignJWT['sign']>[0] = secret, header: { alg: string, kid?: string } = { alg: 'HS256' }): Promise<string> {
  return await new SignJWT(payload).setProtectedHeader(header).sign(key)
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const newPost = { title: 'Hello', content: 'World' }

function assertUnauthenticated (res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 401)
  assert.equal(res.headers['www-authenticate'], 'Bearer realm="blog"')
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  assert.equal(json(res).code, 'UNAUTHENTICATED')
}

function assertInvalidToken (res: LightMyRequestResponse, why: string): void {
  assert.equal(res.statusCode, 401, `${why}: ${res.body}`)
  assert.match(String(res.headers['www-authenticate']), /^Bearer realm="blog", error="invalid_token"/, why)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  assert.equal(json(res).code, 'INVALID_TOKEN', why)
}

for (const kind of await storeKinds()) {
  describe(`authentication [${kind}]`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(kind) })

    const create = async (headers: Record<string, string>) =>
      await t.request({ method: 'POST', url: '/posts', headers, payload: newPost })

    it('answers 401 UNAUTHENTICATED with a bare Bearer challenge when no credential is sent', async () => {
      assertUnauthenticated(await create({}))
    })

    it('lets anyone read published posts without a credential', async () => {
      const res = await t.request({ method: 'GET', url: '/posts' })
      assert.equal(res.statusCode, 200)
    })

    it('accepts a valid HS256 token and makes its sub the author', async () => {
      const res = await create(bearer(await sign(claims())))
      assert.equal(res.statusCode, 201)
      assert.equal(json(res).author, 'alice')
    })

    it('refuses a malformed Authorization header, even on a public read', async () => {
      const token = await sign(claims())
      for (const value of ['Basic YWxpY2U6c2VjcmV0', 'Bearer', 'Bearer ', `Token ${token}`, `Bearer ${token} extra`, `Bearer "${token}"`, `Bearer ${'a'.repeat(9000)}`]) {
        assertInvalidToken(await create({ authorization: value }), value.slice(0, 20))
      }
      assertInvalidToken(await t.request({ method: 'GET', url: '/posts', headers: { authorization: 'Basic YWxpY2U6c2VjcmV0' } }), 'public read')
    })

    it('refuses a token that is not a JWT at all', async () => {
      for (const token of ['abc', 'a.b.c', `${b64({ alg: 'HS256' })}.${b64('x')}`]) {
        assertInvalidToken(await create(bearer(token)), token)
      }
    })

    it('refuses an expired token, and one not yet valid', async () => {
      assertInvalidToken(await create(bearer(await sign(claims({ exp: now() - 3600 })))), 'expired')
      assertInvalidToken(await create(bearer(await sign(claims({ nbf: now() + 3600 })))), 'nbf in the future')
    })

    it('allows 30 seconds of clock skew by default, and no more', async () => {
      assert.equal((await create(bearer(await sign(claims({ exp: now() - 10 }))))).statusCode, 201, 'expired 10 s ago')
      assert.equal((await create(bearer(await sign(claims({ nbf: now() + 10 }))))).statusCode, 201, 'valid in 10 s')
      assertInvalidToken(await create(bearer(await sign(claims({ exp: now() - 60 })))), 'expired 60 s ago')
      assertInvalidToken(await create(bearer(await sign(claims({ nbf: now() + 60 })))), 'valid in 60 s')
    })

    it('refuses a token without exp, or without sub', async () => {
      const { exp: _exp, ...noExp } = claims()
      assertInvalidToken(await create(bearer(await sign(noExp))), 'no exp')
      const { sub: _sub, ...noSub } = claims()
      assertInvalidToken(await create(bearer(await sign(noSub))), 'no sub')
    })

    it('refuses a wrong signature and a tampered payload', async () => {
      assertInvalidToken(await create(bearer(await sign(claims(), new TextEncoder().encode('another-secret-that-is-32-bytes-long!!')))), 'other key')
      const [h, , s] = (await sign(claims({ scope: 'posts:write' }))).split('.')
      assertInvalidToken(await create(bearer(`${h}.${b64(claims({ scope: 'admin' }))}.${s}`)), 'tampered payload')
      assertInvalidToken(await create(bearer(`${h}.${b64(claims())}.`)), 'signature removed')
    })

    it('refuses algorithms other than the configured one (HS384, HS512, RS256)', async () => {
      assertInvalidToken(await create(bearer(await sign(claims(), secret, { alg: 'HS384' }))), 'HS384')
      assertInvalidToken(await create(bearer(await sign(claims(), secret, { alg: 'HS512' }))), 'HS512')
      const { privateKey } = await generateKeyPair('RS256')
      assertInvalidToken(await create(bearer(await sign(claims(), privateKey, { alg: 'RS256' }))), 'RS256 with only HS256 configured')
    })

    it('refuses alg "none" in every spelling, with or without a signature', async () => {
      for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
        const unsigned = `${b64({ alg, typ: 'JWT' })}.${b64(claims({ scope: 'admin' }))}`
        assertInvalidToken(await create(bearer(`${unsigned}.`)), `${alg}, empty signature`)
        assertInvalidToken(await create(bearer(`${unsigned}.${Buffer.from('x').toString('base64url')}`)), `${alg}, junk signature`)
      }
    })

    it('accepts an API key made for a name, whose name becomes the author', async () => {
      const key = await t.apiKey('ci-bot', ['posts:write'])
      const res = await create(bearer(key))
      assert.equal(res.statusCode, 201)
      assert.equal(json(res).author, 'ci-bot')
    })

    it('refuses an unknown API key, a revoked one, and one with an altered secret', async () => {
      const unknown = `blog_${'0'.repeat(16)}_${'A'.repeat(43)}`
      assertInvalidToken(await create(bearer(unknown)), 'unknown key')
      const key = await t.apiKey('short-lived', ['posts:write'])
      const altered = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A')
      assertInvalidToken(await create(bearer(altered)), 'altered secret')
      assert.equal((await create(bearer(key))).statusCode, 201)
      assert.equal(await t.store.apiKeys.revoke('short-lived', new Date()), true)
      assertInvalidToken(await create(bearer(key)), 'revoked key')
    })

    it('does not confuse API keys and JWTs', async () => {
      const key = await t.apiKey('mixup', ['admin'])
      const [, id, keySecret] = /^blog_([0-9a-f]{16})_(.+)$/.exec(key)!
      // A key's parts dressed as a JWT, a key truncated or padded, a JWT dressed as a key.
      assertInvalidToken(await create(bearer(`${b64({ alg: 'HS256' })}.${id}.${keySecret}`)), 'key parts as a JWT')
      assertInvalidToken(await create(bearer(keySecret!)), 'bare key secret')
      assertInvalidToken(await create(bearer(`${key}x`)), 'key with an extra character')
      assertInvalidToken(await create(bearer(`${key}.${key}.${key}`)), 'key as three JWT segments')
      const jwt = await sign(claims())
      assertInvalidToken(await create(bearer(`blog_${jwt}`)), 'JWT with the key prefix')
      assertInvalidToken(await create(bearer(`blog_${id}_${jwt.split('.')[2]!.slice(0, 43)}`)), 'JWT signature as a key secret')
      // A JWT signed with the key's secret as HMAC key is not the key.
      assertInvalidToken(await create(bearer(await sign(claims({ sub: 'mixup', scope: 'admin' }), new TextEncoder().encode(keySecret!)))), 'JWT signed with the key secret')
    })

    it('answers 403 with insufficient_scope when the scope is too narrow', async () => {
      for (const scope of ['', 'orders:write', 'posts:read', 'posts:write:extra', 'Admin']) {
        const res = await create(bearer(await sign(claims({ scope }))))
        assert.equal(res.statusCode, 403, `scope "${scope}"`)
        assert.equal(json(res).code, 'FORBIDDEN')
        assert.equal(res.headers['www-authenticate'], 'Bearer realm="blog", error="insufficient_scope", scope="posts:write"')
      }
      const key = await t.apiKey('orders-only', ['orders:write'])
      assert.equal((await create(bearer(key))).statusCode, 403, 'API key without posts:write')
    })
  })

  describe(`authorization of posts [${kind}]`, () => {
    let t: TestApp
    let alice: Record<string, string>
    let bob: Record<string, string>
    let admin: Record<string, string>
    const ids: Record<string, number> = {}
    before(async () => {
      t = await buildTestApp(kind)
      alice = bearer(await sign(claims({ sub: 'alice' })))
      bob = bearer(await sign(claims({ sub: 'bob' })))
      admin = bearer(await sign(claims({ sub: 'root', scope: 'admin' })))
      for (const [name, who, status] of [['alicePublished', alice, 'published'], ['aliceDraft', alice, 'draft'], ['aliceArchived', alice, 'archived'], ['bobPublished', bob, 'published'], ['bobDraft', bob, 'draft']] as const) {
        const res = await t.request({ method: 'POST', url: '/posts', headers: who, payload: { title: name, content: '', status } })
        assert.equal(res.statusCode, 201)
        ids[name] = json(res).id
      }
    })

    async function titlesSeenBy (headers: Record<string, string>): Promise<string[]> {
      const res = await t.request({ method: 'GET', url: '/posts?limit=100', headers })
      assert.equal(res.statusCode, 200)
      return json<{ title: string }[]>(res).map(p => p.title).sort()
    }

    const replace = async (id: number, headers: Record<string, string>) =>
      await t.request({ method: 'PUT', url: `/posts/${id}`, headers, payload: { title: 'changed', content: 'x', status: 'published' } })

    it('answers 403 when someone else replaces or deletes a published post', async () => {
      const put = await replace(ids.alicePublished!, bob)
      assert.equal(put.statusCode, 403)
      assert.equal(json(put).code, 'FORBIDDEN')
      const del = await t.request({ method: 'DELETE', url: `/posts/${ids.alicePublished}`, headers: bob })
      assert.equal(del.statusCode, 403)
      assert.equal((await t.request({ method: 'GET', url: `/posts/${ids.alicePublished}` })).statusCode, 200, 'still there')
    })

    it('answers 401 to an anonymous PUT or DELETE', async () => {
      assertUnauthenticated(await replace(ids.alicePublished!, {}))
      assertUnauthenticated(await t.request({ method: 'DELETE', url: `/posts/${ids.alicePublished}` }))
    })

    it('hides a draft or archived post from strangers, as if it did not exist (404)', async () => {
      for (const id of [ids.aliceDraft, ids.aliceArchived]) {
        for (const headers of [{}, bob]) {
          const res = await t.request({ method: 'GET', url: `/posts/${id}`, headers })
          assert.equal(res.statusCode, 404)
          assert.equal(json(res).code, 'POST_NOT_FOUND')
        }
        assert.equal((await replace(id!, bob)).statusCode, 404, 'writes too')
        assert.equal((await t.request({ method: 'DELETE', url: `/posts/${id}`, headers: bob })).statusCode, 404)
      }
      assert.equal((await t.request({ method: 'GET', url: `/posts/${ids.aliceDraft}`, headers: alice })).statusCode, 200, 'the author sees it')
      assert.equal((await t.request({ method: 'GET', url: `/posts/${ids.aliceDraft}`, headers: admin })).statusCode, 200, 'an admin sees it')
    })

    it('lists only published posts to strangers, own drafts beside published posts to authors, everything to admins', async () => {
      assert.deepEqual(await titlesSeenBy({}), ['alicePublished', 'bobPublished'])
      assert.deepEqual(await titlesSeenBy(bearer(await sign(claims({ sub: 'carol' })))), ['alicePublished', 'bobPublished'])
      assert.deepEqual(await titlesSeenBy(alice), ['aliceArchived', 'aliceDraft', 'alicePublished', 'bobPublished'])
      assert.deepEqual(await titlesSeenBy(bob), ['alicePublished', 'bobDraft', 'bobPublished'])
      assert.deepEqual(await titlesSeenBy(admin), ['aliceArchived', 'aliceDraft', 'alicePublished', 'bobDraft', 'bobPublished'])
    })

    it('lets admin alone (no other scope) create, replace and delete anyone\'s posts', async () => {
      const created = await t.request({ method: 'POST', url: '/posts', headers: admin, payload: newPost })
      assert.equal(created.statusCode, 201)
      assert.equal((await replace(ids.bobDraft!, admin)).statusCode, 200)
      const del = await t.request({ method: 'DELETE', url: `/posts/${ids.bobPublished}`, headers: admin })
      assert.equal(del.statusCode, 204)
      const key = await t.apiKey('ops', ['admin'])
      assert.equal((await replace(ids.aliceArchived!, bearer(key))).statusCode, 200, 'an admin API key too')
    })

    it('lets the author change their own post', async () => {
      assert.equal((await replace(ids.alicePublished!, alice)).statusCode, 200)
    })
  })

  describe(`issuer and audience [${kind}]`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(kind, { AUTH_JWT_ISSUER: 'https://idp.example', AUTH_JWT_AUDIENCE: 'blog-api' }) })
    const create = async (c: JWTPayload) => await t.request({ method: 'POST', url: '/posts', headers: bearer(await sign(claims(c))), payload: newPost })

    it('accepts the configured issuer and audience', async () => {
      assert.equal((await create({ iss: 'https://idp.example', aud: 'blog-api' })).statusCode, 201)
      assert.equal((await create({ iss: 'https://idp.example', aud: ['other', 'blog-api'] })).statusCode, 201)
    })

    it('refuses a wrong or missing issuer or audience', async () => {
      assertInvalidToken(await create({ iss: 'https://evil.example', aud: 'blog-api' }), 'wrong iss')
      assertInvalidToken(await create({ aud: 'blog-api' }), 'no iss')
      assertInvalidToken(await create({ iss: 'https://idp.example', aud: 'other-api' }), 'wrong aud')
      assertInvalidToken(await create({ iss: 'https://idp.example' }), 'no aud')
    })
  })

  describe(`clock tolerance setting [${kind}]`, () => {
    let t: TestApp
    before(async () => { t = await buildTestApp(kind, { AUTH_CLOCK_TOLERANCE_S: '0' }) })

    it('AUTH_CLOCK_TOLERANCE_S=0 refuses a token expired seconds ago', async () => {
      assertInvalidToken(await t.request({ method: 'POST', url: '/posts', headers: bearer(await sign(claims({ exp: now() - 5 }))), payload: newPost }), 'expired 5 s ago')
    })
  })

  for (const alg of ['RS256', 'ES256'] as const) {
    describe(`${alg} with AUTH_JWT_PUBLIC_KEY [${kind}]`, () => {
      let t: TestApp
      let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']
      let publicPem: string
      before(async () => {
        const pair = await generateKeyPair(alg, { extractable: true })
        privateKey = pair.privateKey
        publicPem = await exportSPKI(pair.publicKey)
        t = await buildTestApp(kind, { AUTH_JWT_SECRET: '', AUTH_JWT_PUBLIC_KEY: publicPem })
      })
      const create = async (token: string) => await t.request({ method: 'POST', url: '/posts', headers: bearer(token), payload: newPost })

      it(`accepts a token signed with the matching ${alg} private key`, async () => {
        const res = await create(await sign(claims(), privateKey, { alg }))
        assert.equal(res.statusCode, 201)
      })

      it('refuses a token signed by another key of the same kind', async () => {
        const other = await generateKeyPair(alg)
        assertInvalidToken(await create(await sign(claims(), other.privateKey, { alg })), 'other key')
      })

      it('refuses the other asymmetric algorithm, and HS256 made with the public key as secret', async () => {
        const otherAlg = alg === 'RS256' ? 'ES256' : 'RS256'
        const other = await generateKeyPair(otherAlg)
        assertInvalidToken(await create(await sign(claims(), other.privateKey, { alg: otherAlg })), otherAlg)
        // The classic algorithm confusion: the public key, which anyone has, used as an HMAC secret.
        assertInvalidToken(await create(await sign(claims({ scope: 'admin' }), new TextEncoder().encode(publicPem), { alg: 'HS256' })), 'HS256 with the public key')
        assertInvalidToken(await create(await sign(claims(), secret, { alg: 'HS256' })), 'HS256 when no secret is configured')
      })
    })
  }

  describe(`JWKS with AUTH_JWKS_URL and key rotation [${kind}]`, () => {
    let t: TestApp
    let server: http.Server
    let keySet: { keys: object[] } = { keys: [] }
    let failing = false
    let fetches = 0
    const keys: Record<string, { privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'], jwk: object }> = {}

    before(async () => {
      for (const [kid, alg] of [['key-1', 'RS256'], ['key-2', 'ES256']] as const) {
        const pair = await generateKeyPair(alg, { extractable: true })
        keys[kid] = { privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' } }
      }
      keySet = { keys: [keys['key-1']!.jwk] }
      server = http.createServer((_req, res) => {
        fetches++
        if (failing) {
          res.writeHead(500).end()
          return
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(keySet))
      })
      await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
      const { port } = server.address() as AddressInfo
      t = await buildTestApp(kind, { AUTH_JWT_SECRET: '', AUTH_JWKS_URL: `http://127.0.0.1:${port}/.well-known/jwks.json`, AUTH_JWKS_COOLDOWN_S: '0' })
    })
    after(async () => {
      await new Promise(resolve => server.close(resolve))
    })

    const tokenOf = async (kid: string, c: JWTPayload = claims()) =>
      await sign(c, keys[kid]!.privateKey, { alg: kid === 'key-1' ? 'RS256' : 'ES256', kid })
    const create = async (token: string) => await t.request({ method: 'POST', url: '/posts', headers: bearer(token), payload: newPost })

    it('accepts a token signed by a key of the key set', async () => {
      assert.equal((await create(await tokenOf('key-1'))).statusCode, 201)
      assert.ok(fetches >= 1, 'the key set was fetched')
    })

    it('picks up a rotation: a new kid is accepted once the key set has it, and a removed key is refused', async () => {
      assertInvalidToken(await create(await tokenOf('key-2')), 'kid not yet published')
      keySet = { keys: [keys['key-2']!.jwk] }
      assert.equal((await create(await tokenOf('key-2'))).statusCode, 201, 'new kid after rotation')
      assertInvalidToken(await create(await tokenOf('key-1')), 'retired kid')
    })

    it('refuses a token whose signature does not match its kid', async () => {
      const forged = await sign(claims(), keys['key-1']!.privateKey, { alg: 'RS256', kid: 'key-2' })
      assertInvalidToken(await create(forged), 'kid of another key')
    })

    it('answers 503 with Retry-After, not 401, when the key set cannot be fetched', async () => {
      failing = true
      try {
        const res = await create(await tokenOf('key-1'))
        assert.equal(res.statusCode, 503)
        assert.equal(json(res).code, 'SERVICE_UNAVAILABLE')
        assert.ok(Number(res.headers['retry-after']) > 0)
      } finally {
        failing = false
      }
    })
  })
}
