import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

for (const kind of await storeKinds()) {
  describe(`posts CRUD [${kind}]`, () => {
    let t: TestApp
    let alice: { authorization: string }
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice', ['posts:write'])
    })

    async function create (body: unknown, headers: Record<string, string> = alice) {
      return await t.request({ method: 'POST', url: '/posts', headers, payload: body as object })
    }

    describe('POST /posts', () => {
      it('creates a post: 201, Location, id, timestamps, author, default status', async () => {
        const res = await create({ title: '  Hello  ', content: 'World' })
        assert.equal(res.statusCode, 201)
        const post = json(res)
        assert.equal(res.headers.location, `/posts/${post.id}`)
        assert.ok(Number.isInteger(post.id) && post.id >= 1)
        assert.equal(post.title, 'Hello', 'the title is stored trimmed')
        assert.equal(post.content, 'World')
        assert.equal(post.status, 'published')
        assert.equal(post.author, 'alice')
        assert.match(post.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        assert.equal(post.created_at, post.updated_at)
        assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8/)
      })

      it('never reuses an id', async () => {
        const a = json(await create({ title: 'a', content: '' }))
        await t.request({ method: 'DELETE', url: `/posts/${a.id}`, headers: alice })
        const b = json(await create({ title: 'b', content: '' }))
        assert.ok(b.id > a.id)
      })

      it('reports every violated constraint in one 422', async () => {
        const res = await create({ title: '   ', content: 5, status: 'hidden', colour: 'red' })
        assert.equal(res.statusCode, 422)
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        const p = json(res)
        assert.equal(p.code, 'VALIDATION_FAILED')
        const got = p.errors.map((e: { field: string, code: string }) => `${e.field}:${e.code}`).sort()
        assert.deepEqual(got, ['colour:UNKNOWN_FIELD', 'content:INVALID_TYPE', 'status:INVALID_VALUE', 'title:BLANK'])
        assert.equal(p.errors.find((e: { field: string }) => e.field === 'status').message, 'must be one of: draft, published, archived, scheduled')
      })

      it('requires title and content', async () => {
        const p = json(await create({}))
        assert.deepEqual(p.errors.map((e: { field: string, code: string }) => `${e.field}:${e.code}`).sort(), ['content:REQUIRED', 'title:REQUIRED'])
      })

      it('limits the title to 200 characters after trimming, and content to 100 000', async () => {
        assert.equal((await create({ title: ` ${'x'.repeat(200)} `, content: '' })).statusCode, 201)
        const p = json(await create({ title: 'x'.repeat(201), content: 'y'.repeat(100_001) }))
        assert.deepEqual(p.errors.map((e: { field: string, code: string }) => `${e.field}:${e.code}`).sort(), ['content:TOO_LONG', 'title:TOO_LONG'])
        assert.equal((await create({ title: 'ok', content: 'y'.repeat(100_000) })).statusCode, 201)
      })

      it('counts characters, not bytes or UTF-16 units', async () => {
        assert.equal((await create({ title: '😀'.repeat(200), content: '' })).statusCode, 201)
      })

      it('rejects an id chosen by the client', async () => {
        const p = json(await create({ id: 7, title: 't', content: '' }))
        assert.equal(p.errors[0].code, 'READ_ONLY')
      })

      it('answers 400 MALFORMED_JSON for a body that is not JSON', async () => {
        const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload: '{"title": ' })
        assert.equal(res.statusCode, 400)
        assert.equal(json(res).code, 'MALFORMED_JSON')
      })

      it('answers 422 for JSON that is not an object, and for no body at all', async () => {
        for (const payload of ['null', '[]', '"text"', '42']) {
          const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload })
          assert.equal(res.statusCode, 422, payload)
          assert.equal(json(res).errors[0].code, 'INVALID_TYPE')
        }
        const none = await t.request({ method: 'POST', url: '/posts', headers: alice })
        assert.equal(none.statusCode, 422)
        assert.deepEqual(json(none).errors, [{ field: '', code: 'REQUIRED', message: 'A JSON request body is required' }])
        const empty = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload: '' })
        assert.equal(empty.statusCode, 400)
        assert.equal(json(empty).code, 'MALFORMED_JSON')
      })

      it('reports __proto__ and constructor members as unknown fields, touching no prototype', async () => {
        for (const [payload, field] of [['{"__proto__":{"admin":true},"title":"t","content":""}', '__proto__'], ['{"title":"t","content":"","constructor":{"prototype":{"x":1}}}', 'constructor']] as const) {
          const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload })
          assert.equal(res.statusCode, 422, payload)
          assert.deepEqual(json(res).errors.map((e: { field: string, code: string }) => `${e.field}:${e.code}`), [`${field}:UNKNOWN_FIELD`])
        }
        assert.equal(({} as Record<string, unknown>).admin, undefined)
      })

      it('answers 400 MALFORMED_JSON for a body that is not UTF-8 or has an unpaired surrogate', async () => {
        for (const payload of [Buffer.from('{"title":"caf\xe9","content":""}', 'latin1'), Buffer.from('{"title":"\\ud800abc","content":""}')]) {
          const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload })
          assert.equal(res.statusCode, 400, payload.toString('latin1'))
          assert.equal(json(res).code, 'MALFORMED_JSON')
        }
        const pair = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload: '{"title":"\\ud83d\\ude00","content":""}' })
        assert.equal(json(pair).title, '😀', 'an escaped surrogate pair is one character')
      })

      it('answers 415 when a vendor type names another version than the one serving the request', async () => {
        const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/vnd.blog.v2+json' }, payload: JSON.stringify({ title: 't', content: '' }) })
        assert.equal(res.statusCode, 415)
        const v2 = await t.request({ method: 'POST', url: '/v2/posts', headers: { ...alice, 'content-type': 'application/vnd.blog.v2+json' }, payload: JSON.stringify({ title: 't', content: '' }) })
        assert.equal(v2.statusCode, 201)
      })

      it('answers 405, not 415, to a method the path does not have, whatever the body', async () => {
        const res = await t.request({ method: 'POST', url: '/posts/1', headers: { ...alice, 'content-type': 'text/plain' }, payload: 'hello' })
        assert.equal(res.statusCode, 405)
        assert.equal(json(res).code, 'METHOD_NOT_ALLOWED')
      })

      it('answers 400 MALFORMED_JSON, never a 500, to a document nested too deeply', async () => {
        for (const payload of ['['.repeat(5000) + ']'.repeat(5000), '{"title":' + '{"a":'.repeat(3000) + '1' + '}'.repeat(3000) + ',"content":""}']) {
          const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload })
          assert.equal(res.statusCode, 400)
          assert.match(json(res).detail, /deeper than 64/)
        }
      })

      it('answers 415 for a body that is not JSON by type', async () => {
        const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'text/plain' }, payload: 'hello' })
        assert.equal(res.statusCode, 415)
        assert.equal(json(res).code, 'UNSUPPORTED_MEDIA_TYPE')
      })

      it('accepts the vendor media type and a UTF-8 charset', async () => {
        for (const type of ['application/vnd.blog.v1+json', 'application/json; charset=UTF-8']) {
          const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': type }, payload: JSON.stringify({ title: 't', content: 'c' }) })
          assert.equal(res.statusCode, 201, type)
        }
      })

      it('answers 413 PAYLOAD_TOO_LARGE over 1 MiB', async () => {
        const res = await t.request({ method: 'POST', url: '/posts', headers: { ...alice, 'content-type': 'application/json' }, payload: JSON.stringify({ title: 't', content: 'x'.repeat(1024 * 1024) }) })
        assert.equal(res.statusCode, 413)
        assert.equal(json(res).code, 'PAYLOAD_TOO_LARGE')
      })

      it('needs a credential with posts:write', async () => {
        const anon = await t.request({ method: 'POST', url: '/posts', payload: { title: 't', content: '' } })
        assert.equal(anon.statusCode, 401)
        assert.match(String(anon.headers['www-authenticate']), /^Bearer realm=/)
        const reader = await create({ title: 't', content: '' }, await t.auth('bob', ['orders:write']))
        assert.equal(reader.statusCode, 403)
        assert.equal(json(reader).code, 'FORBIDDEN')
      })
    })

    describe('GET /posts/:post_id', () => {
      it('returns the whole post', async () => {
        const created = json(await create({ title: 'Read me', content: 'Body', status: 'published' }))
        const res = await t.request({ method: 'GET', url: `/posts/${created.id}` })
        assert.equal(res.statusCode, 200)
        assert.deepEqual(json(res), created)
      })

      it('answers 404 POST_NOT_FOUND for an unknown id', async () => {
        const res = await t.request({ method: 'GET', url: '/posts/999999' })
        assert.equal(res.statusCode, 404)
        const p = json(res)
        assert.equal(p.code, 'POST_NOT_FOUND')
        assert.equal(p.type, '/problems/post-not-found')
        assert.equal(p.instance, '/posts/999999')
      })

      it('answers 400 BAD_REQUEST, with trace and request ids, for a path that cannot be decoded', async () => {
        const res = await t.request({ method: 'GET', url: '/posts/%' })
        assert.equal(res.statusCode, 400)
        const p = json(res)
        assert.equal(p.code, 'BAD_REQUEST')
        assert.match(p.trace_id, /^[0-9a-f]{32}$/)
        assert.equal(p.request_id, res.headers['x-request-id'])
        assert.ok(String(res.headers.traceparent).includes(p.trace_id))
      })

      it('answers 422 for an id that is not a positive integer', async () => {
        for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999', '0x1', '1e0', '+1', '01', '1.0', '%201']) {
          const res = await t.request({ method: 'GET', url: `/posts/${id}` })
          assert.equal(res.statusCode, 422, id)
          assert.equal(json(res).errors[0].field, 'post_id')
        }
      })

      it('hides drafts from everyone but their author and admins', async () => {
        const draft = json(await create({ title: 'secret', content: '', status: 'draft' }))
        assert.equal((await t.request({ method: 'GET', url: `/posts/${draft.id}` })).statusCode, 404)
        assert.equal((await t.request({ method: 'GET', url: `/posts/${draft.id}`, headers: await t.auth('bob') })).statusCode, 404)
        assert.equal((await t.request({ method: 'GET', url: `/posts/${draft.id}`, headers: alice })).statusCode, 200)
        assert.equal((await t.request({ method: 'GET', url: `/posts/${draft.id}`, headers: await t.auth('root', ['admin']) })).statusCode, 200)
      })
    })

    describe('GET /posts', () => {
      it('lists {id, title} newest first as a bare array', async () => {
        const a = json(await create({ title: 'first', content: 'x' }))
        const b = json(await create({ title: 'second', content: 'x' }))
        const res = await t.request({ method: 'GET', url: '/posts?limit=100' })
        assert.equal(res.statusCode, 200)
        const items = json<{ id: number, title: string }[]>(res)
        assert.ok(Array.isArray(items))
        for (const item of items) assert.deepEqual(Object.keys(item).sort(), ['id', 'title'])
        const ids = items.map(i => i.id)
        assert.ok(ids.indexOf(b.id) < ids.indexOf(a.id), 'newest first')
      })
    })

    describe('PUT /posts/:post_id', () => {
      it('replaces the whole post, status back to its default', async () => {
        const p = json(await create({ title: 'old', content: 'old', status: 'draft' }))
        const res = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: alice, payload: { title: 'new', content: 'new' } })
        assert.equal(res.statusCode, 200)
        const q = json(res)
        assert.equal(q.title, 'new')
        assert.equal(q.status, 'published')
        assert.equal(q.created_at, p.created_at)
        assert.ok(q.updated_at >= p.updated_at)
      })

      it('accepts a representation sent back as read (read-only members ignored)', async () => {
        const p = json(await create({ title: 'round', content: 'trip' }))
        const res = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: alice, payload: { ...p, title: 'round 2', author: 'mallory', created_at: 123, updated_at: null, _links: 'x' } })
        assert.equal(res.statusCode, 200)
        assert.equal(json(res).author, 'alice')
        assert.equal(json(res).created_at, p.created_at)
      })

      it('answers 422 ID_MISMATCH when the body names another id', async () => {
        const p = json(await create({ title: 't', content: '' }))
        const res = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: alice, payload: { id: p.id + 1, title: 't', content: '' } })
        assert.equal(res.statusCode, 422)
        assert.equal(json(res).errors[0].code, 'ID_MISMATCH')
      })

      it('answers 404 for an unknown id: ids are the service\'s', async () => {
        const res = await t.request({ method: 'PUT', url: '/posts/987654', headers: alice, payload: { title: 't', content: '' } })
        assert.equal(res.statusCode, 404)
      })

      it('lets only the author or an admin replace', async () => {
        const p = json(await create({ title: 't', content: '' }))
        const bob = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: await t.auth('bob'), payload: { title: 'x', content: '' } })
        assert.equal(bob.statusCode, 403)
        const admin = await t.request({ method: 'PUT', url: `/posts/${p.id}`, headers: await t.auth('root', ['admin']), payload: { title: 'x', content: '' } })
        assert.equal(admin.statusCode, 200)
        assert.equal(json(admin).author, 'alice')
      })
    })

    describe('DELETE /posts/:post_id', () => {
      it('deletes: 204 with no body, then 404', async () => {
        const p = json(await create({ title: 't', content: '' }))
        const res = await t.request({ method: 'DELETE', url: `/posts/${p.id}`, headers: alice })
        assert.equal(res.statusCode, 204)
        assert.equal(res.body, '')
        assert.equal((await t.request({ method: 'GET', url: `/posts/${p.id}` })).statusCode, 404)
        assert.equal((await t.request({ method: 'DELETE', url: `/posts/${p.id}`, headers: alice })).statusCode, 404)
      })

      it('ignores body headers on a DELETE without a body', async () => {
        for (const type of ['application/json', 'text/plain']) {
          const p = json(await create({ title: 't', content: '' }))
          const res = await t.request({ method: 'DELETE', url: `/posts/${p.id}`, headers: { ...alice, 'content-type': type } })
          assert.equal(res.statusCode, 204, type)
        }
      })

      it('lets only the author or an admin delete', async () => {
        const p = json(await create({ title: 't', content: '' }))
        assert.equal((await t.request({ method: 'DELETE', url: `/posts/${p.id}`, headers: await t.auth('bob') })).statusCode, 403)
        assert.equal((await t.request({ method: 'DELETE', url: `/posts/${p.id}` })).statusCode, 401)
      })
    })
  })
}
