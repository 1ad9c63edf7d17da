import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AppError } from '../../../src/errors.ts'
import { applyJsonPatch, applyMergePatch, type Json, type JsonPatchOperation } from '../../../src/http/toolkit/patch.ts'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

describe('RFC 7396 Appendix A examples', () => {
  const cases: [Json, Json, Json][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ]
  for (const [original, patch, result] of cases) {
    it(`${JSON.stringify(original)} + ${JSON.stringify(patch)} → ${JSON.stringify(result)}`, () => {
      const copy = structuredClone(original)
      assert.deepEqual(applyMergePatch(original, patch), result)
      assert.deepEqual(original, copy, 'the target is not changed in place')
    })
  }
})

describe('RFC 6902 Appendix A examples', () => {
  const ok: [string, Json, JsonPatchOperation[], Json][] = [
    ['A.1 adding an object member', { foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }], { baz: 'qux', foo: 'bar' }],
    ['A.2 adding an array element', { foo: ['bar', 'baz'] }, [{ op: 'add', path: '/foo/1', value: 'qux' }], { foo: ['bar', 'qux', 'baz'] }],
    ['A.3 removing an object member', { baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }], { foo: 'bar' }],
    ['A.4 removing an array element', { foo: ['bar', 'qux', 'baz'] }, [{ op: 'remove', path: '/foo/1' }], { foo: ['bar', 'baz'] }],
    ['A.5 replacing a value', { baz: 'qux', foo: 'bar' }, [{ op: 'replace', path: '/baz', value: 'boo' }], { baz: 'boo', foo: 'bar' }],
    ['A.6 moving a value', { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } }, [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }], { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } }],
    ['A.7 moving an array element', { foo: ['all', 'grass', 'cows', 'eat'] }, [{ op: 'move', from: '/foo/1', path: '/foo/3' }], { foo: ['all', 'cows', 'eat', 'grass'] }],
    ['A.8 testing a value: success', { baz: 'qux', foo: ['a', 2, 'c'] }, [{ op: 'test', path: '/baz', value: 'qux' }, { op: 'test', path: '/foo/1', value: 2 }], { baz: 'qux', foo: ['a', 2, 'c'] }],
    ['A.10 adding a nested member object', { foo: 'bar' }, [{ op: 'add', path: '/child', value: { grandchild: {} } }], { foo: 'bar', child: { grandchild: {} } }],
    ['A.11 ignoring unrecognized elements', { foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux', xyz: 123 } as JsonPatchOperation], { foo: 'bar', baz: 'qux' }],
    ['A.14 ~ escape ordering', { '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: 10 }], { '/': 9, '~1': 10 }],
    ['A.16 adding an array value', { foo: ['bar'] }, [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }], { foo: ['bar', ['abc', 'def']] }],
  ]
  for (const [name, doc, ops, result] of ok) {
    it(name, () => {
      const copy = structuredClone(doc)
      assert.deepEqual(applyJsonPatch(doc, ops), result)
      assert.deepEqual(doc, copy, 'the document is not changed in place')
    })
  }

  const failing: [string, Json, JsonPatchOperation[], string][] = [
    ['A.9 testing a value: error', { baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }], 'PATCH_TEST_FAILED'],
    ['A.12 adding to a nonexistent target', { foo: 'bar' }, [{ op: 'add', path: '/baz/bat', value: 'qux' }], 'INVALID_PATCH'],
    ['A.15 comparing strings and numbers', { '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: '10' }], 'PATCH_TEST_FAILED'],
  ]
  for (const [name, doc, ops, code] of failing) {
    it(`${name} → ${code}`, () => {
      assert.throws(() => applyJsonPatch(doc, ops), (err: unknown) => err instanceof AppError && err.code === code)
    })
  }
  // A.13 (an operation object with two "op" members) cannot be expressed once parsed: JSON.parse keeps the last member.

  it('applies all operations or none', () => {
    const doc = { a: 1 }
    assert.throws(() => applyJsonPatch(doc, [{ op: 'replace', path: '/a', value: 2 }, { op: 'test', path: '/a', value: 1 }]))
    assert.deepEqual(doc, { a: 1 })
  })
})

for (const kind of await storeKinds()) {
  describe(`PATCH /posts/:post_id [${kind}]`, () => {
    let t: TestApp
    let alice: { authorization: string }
    before(async () => {
      t = await buildTestApp(kind)
      alice = await t.auth('alice')
    })

    async function post (body: object = { title: 'Title', content: 'Content', status: 'draft' }) {
      return json((await t.request({ method: 'POST', url: '/posts', headers: alice, payload: body })))
    }
    function patch (id: number, type: string, body: unknown, headers: Record<string, string> = {}) {
      return t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...alice, 'content-type': type, ...headers }, payload: JSON.stringify(body) })
    }

    it('applies a merge patch and keeps the other fields', async () => {
      const p = await post()
      const res = await patch(p.id, 'application/merge-patch+json', { title: 'New title' })
      assert.equal(res.statusCode, 200)
      const q = json(res)
      assert.equal(q.title, 'New title')
      assert.equal(q.content, 'Content')
      assert.equal(q.status, 'draft')
      assert.notEqual(res.headers.etag, undefined)
    })

    it('applies a JSON patch with a passing test', async () => {
      const p = await post()
      const res = await patch(p.id, 'application/json-patch+json', [
        { op: 'test', path: '/title', value: 'Title' },
        { op: 'replace', path: '/status', value: 'published' },
        { op: 'add', path: '/content', value: 'More' },
      ])
      assert.equal(res.statusCode, 200)
      assert.equal(json(res).status, 'published')
      assert.equal(json(res).content, 'More')
    })

    it('answers 409 PATCH_TEST_FAILED and changes nothing when a test fails', async () => {
      const p = await post()
      const res = await patch(p.id, 'application/json-patch+json', [{ op: 'replace', path: '/title', value: 'X' }, { op: 'test', path: '/title', value: 'nope' }])
      assert.equal(res.statusCode, 409)
      assert.equal(json(res).code, 'PATCH_TEST_FAILED')
      const now = json(await t.request({ method: 'GET', url: `/posts/${p.id}`, headers: alice }))
      assert.equal(now.title, 'Title')
      assert.equal(now.updated_at, p.updated_at)
    })

    it('answers 422 INVALID_PATCH for an operation that cannot apply', async () => {
      const p = await post()
      const res = await patch(p.id, 'application/json-patch+json', [{ op: 'remove', path: '/nothing/here' }])
      assert.equal(res.statusCode, 422)
      assert.equal(json(res).code, 'INVALID_PATCH')
    })

    it('validates the result like a PUT body', async () => {
      const p = await post()
      const removed = await patch(p.id, 'application/merge-patch+json', { title: null, content: 7, extra: true })
      assert.equal(removed.statusCode, 422)
      const got = json(removed).errors.map((e: { field: string, code: string }) => `${e.field}:${e.code}`).sort()
      assert.deepEqual(got, ['content:INVALID_TYPE', 'extra:UNKNOWN_FIELD', 'title:REQUIRED'])
      const blank = await patch(p.id, 'application/json-patch+json', [{ op: 'replace', path: '/title', value: '  ' }])
      assert.equal(json(blank).errors[0].code, 'BLANK')
    })

    it('refuses to change read-only members', async () => {
      const p = await post()
      const res = await patch(p.id, 'application/merge-patch+json', { author: 'mallory', id: 99 })
      assert.equal(res.statusCode, 422)
      assert.deepEqual(json(res).errors.map((e: { field: string }) => e.field).sort(), ['author', 'id'])
    })

    it('answers 422 INVALID_PATCH for a path through __proto__ or constructor', async () => {
      const p = await post()
      for (const path of ['/__proto__/x', '/constructor/prototype/x']) {
        const res = await patch(p.id, 'application/json-patch+json', [{ op: 'add', path, value: 1 }])
        assert.equal(res.statusCode, 422, path)
        assert.equal(json(res).code, 'INVALID_PATCH')
      }
      assert.equal(({} as Record<string, unknown>).x, undefined)
    })

    it('reports a merge patch member named __proto__ as an unknown field, like POST and PUT do', async () => {
      const p = await post()
      const res = await patch(p.id, 'application/merge-patch+json', { ['__proto__']: { title: 'pp' } })
      assert.equal(res.statusCode, 422)
      assert.deepEqual(json(res).errors.map((e: { field: string, code: string }) => `${e.field}:${e.code}`), ['__proto__:UNKNOWN_FIELD'])
    })

    it('answers 415 with Accept-Patch to a vendor type of another version', async () => {
      const p = await post()
      const res = await patch(p.id, 'application/vnd.blog.v2+json', {})
      assert.equal(res.statusCode, 415)
      assert.equal(res.headers['accept-patch'], 'application/merge-patch+json, application/json-patch+json')
    })

    it('answers 415 with Accept-Patch when the patch has no Content-Type at all', async () => {
      const p = await post()
      const res = await t.request({ method: 'PATCH', url: `/posts/${p.id}`, headers: alice })
      assert.equal(res.statusCode, 415)
      assert.equal(res.headers['accept-patch'], 'application/merge-patch+json, application/json-patch+json')
    })

    it('answers 415 with Accept-Patch for plain JSON and other types', async () => {
      const p = await post()
      for (const type of ['application/json', 'text/plain']) {
        const res = await patch(p.id, type, { title: 'x' })
        assert.equal(res.statusCode, 415, type)
        assert.equal(res.headers['accept-patch'], 'application/merge-patch+json, application/json-patch+json')
      }
    })

    it('honours If-Match and Prefer: return=minimal', async () => {
      const p = await post()
      const first = await t.request({ method: 'GET', url: `/posts/${p.id}`, headers: alice })
      const stale = await patch(p.id, 'application/merge-patch+json', { title: 'A' }, { 'if-match': '"stale"' })
      assert.equal(stale.statusCode, 412)
      const res = await patch(p.id, 'application/merge-patch+json', { title: 'B' }, { 'if-match': String(first.headers.etag), prefer: 'return=minimal' })
      assert.equal(res.statusCode, 204)
      assert.equal(res.body, '')
      assert.equal(res.headers['preference-applied'], 'return=minimal')
      assert.notEqual(res.headers.etag, first.headers.etag)
    })

    it('lets only the author or an admin patch', async () => {
      const p = await post({ title: 'T', content: '', status: 'published' })
      const bob = await t.request({ method: 'PATCH', url: `/posts/${p.id}`, headers: { ...(await t.auth('bob')), 'content-type': 'application/merge-patch+json' }, payload: '{"title":"x"}' })
      assert.equal(bob.statusCode, 403)
    })

    it('patches the version 2 representation under /v2', async () => {
      const p = await post()
      const res = await t.request({ method: 'PATCH', url: `/v2/posts/${p.id}`, headers: { ...alice, 'content-type': 'application/json-patch+json' }, payload: JSON.stringify([{ op: 'test', path: '/postId', value: p.id }, { op: 'replace', path: '/title', value: 'v2' }]) })
      assert.equal(res.statusCode, 200)
      assert.equal(json(res).postId, p.id)
      assert.equal(json(res).title, 'v2')
    })
  })
}
