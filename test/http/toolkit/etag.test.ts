import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Type } from '@sinclair/typebox'
import { Representations, resourceEtag } from '../../../src/http/toolkit/conditional.ts'

describe('resourceEtag', () => {
  const row = { id: 7, revision: 3, updatedAt: '2026-11-24T10:00:00.123Z' }
  const at = Date.parse(row.updatedAt)
  const digestOf = (...schemas: unknown[]) => new Representations([['etag-test', schemas]]).digest('etag-test')
  const title = digestOf(Type.Object({ title: Type.String() }, { $id: 'EtagTest' }))

  it('is a strong tag of etagc characters made of the row and the representation, the same every time', () => {
    const tag = resourceEtag(title, row, at, 2, '/v2')
    assert.match(tag, /^"[\x21\x23-\x7e]+"$/)
    assert.equal(resourceEtag(title, { ...row }, at, 2, '/v2'), tag)
  })

  it('changes with the revision, updated_at, the version and the link base', () => {
    const tags = [
      resourceEtag(title, row, at, 1, ''),
      resourceEtag(title, { ...row, revision: 4 }, at, 1, ''),
      resourceEtag(title, row, at + 1, 1, ''),
      resourceEtag(title, row, at, 2, ''),
      resourceEtag(title, row, at, 1, '/v1'),
      resourceEtag(title, { ...row, id: 8 }, at, 1, ''),
    ]
    assert.equal(new Set(tags).size, tags.length)
  })

  it('changes when the representation\'s schemas change (a field added), for the same stored revision', () => {
    const withSlug = digestOf(Type.Object({ title: Type.String(), slug: Type.String() }, { $id: 'EtagTest' }))
    assert.notEqual(resourceEtag(withSlug, row, at, 2, ''), resourceEtag(title, row, at, 2, ''))
    assert.equal(digestOf(Type.Object({ title: Type.String() }, { $id: 'EtagTest' })), title, 'the same schemas give the same tag (every instance agrees)')
    assert.equal(new Representations([]).digest('undeclared'), 'undeclared')
  })
})
