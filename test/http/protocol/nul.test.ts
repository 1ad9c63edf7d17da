import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { recordResult } from '../../reliability-record.ts'
import { before } from '../../support/hooks.ts'

function assertNulRefused (res: LightMyRequestResponse, field: string): void {
  assert.equal(res.statusCode, 422, res.body)
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
  const problem = json(res)
  assert.equal(problem.code, 'VALIDATION_FAILED')
  assert.deepEqual(problem.errors.map((e: { field: string, code: string }) => [e.field, e.code]), [[field, 'INVALID_FORMAT']])
  assert.match(problem.errors[0].message, /NUL/)
}

// PostgreSQL text cannot hold U+0000 and SQLite can: both stores must answer alike, with a 422.
for (const kind of await storeKinds()) {
  describe(`the NUL character [${kind}]`, () => {
    let t: TestApp
    let auth: { authorization: string }
    let id: number
    before(async () => {
      t = await buildTestApp(kind)
      auth = await t.auth('alice')
      const res = await t.request({ method: 'POST', url: '/posts', headers: auth, payload: { title: 'kept', content: 'as is' } })
      assert.equal(res.statusCode, 201)
      id = json(res).id
    })

    it('is refused in a title or content on POST with 422 naming the member', async () => {
      assertNulRefused(await t.request({ method: 'POST', url: '/posts', headers: auth, payload: { title: 'a\u0000b', content: '' } }), 'title')
      assertNulRefused(await t.request({ method: 'POST', url: '/posts', headers: auth, payload: { title: 'ok', content: '\u0000' } }), 'content')
    })

    it('is refused on PUT, in a merge patch and in a JSON Patch value', async () => {
      assertNulRefused(await t.request({ method: 'PUT', url: `/posts/${id}`, headers: auth, payload: { title: 'x', content: 'a\u0000' } }), 'content')
      assertNulRefused(await t.request({
        method: 'PATCH', url: `/posts/${id}`, headers: { ...auth, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ title: '\u0000' }),
      }), 'title')
      assertNulRefused(await t.request({
        method: 'PATCH', url: `/posts/${id}`, headers: { ...auth, 'content-type': 'application/json-patch+json' }, payload: JSON.stringify([{ op: 'replace', path: '/title', value: 'x\u0000' }]),
      }), '0/value')
    })

    it('is refused in a member name', async () => {
      assertNulRefused(await t.request({ method: 'POST', url: '/posts', headers: auth, payload: { title: 'ok', content: '', 'a\u0000/b': 1 } }), 'a\\u0000~1b')
    })

    it('left the post as it was, and text without NUL is still accepted', async () => {
      const res = await t.request({ method: 'GET', url: `/posts/${id}` })
      assert.deepEqual([json(res).title, json(res).content], ['kept', 'as is'])
      const created = await t.request({ method: 'POST', url: '/posts', headers: auth, payload: { title: 'a\u0001b', content: '\u00a0\uffff' } })
      assert.equal(created.statusCode, 201, created.body)
    })

    it('in a JWT subject is 401 invalid_token, not 500', async () => {
      const token = await t.token('ali\u0000ce', ['posts:write'])
      const res = await t.request({ method: 'POST', url: '/posts', headers: { authorization: `Bearer ${token}` }, payload: { title: 't', content: '' } })
      assert.equal(res.statusCode, 401, res.body)
      assert.equal(json(res).code, 'INVALID_TOKEN')
      assert.match(String(res.headers['www-authenticate']), /error="invalid_token"/)
      recordResult(`nul-${kind}`, { test: `NUL (U+0000) in bodies and tokens [${kind}]`, injected: 'NUL in title, content, member name, PUT, merge patch, JSON Patch value, JWT sub', count: 7, result: '422 naming the member (401 invalid_token for the token); 0 × 500; the post unchanged' })
    })
  })
}
