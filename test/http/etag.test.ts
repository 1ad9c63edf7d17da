import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Type } from '@sinclair/typebox'
import { declareRepresentation, resourceEtag } from '../../src/http/toolkit/conditional.ts'

describe('resourceEtag', () => {
  const row = { id: 7, revision: 3, updatedAt: '2026-11-24T10:00:00.123Z' }
  const at = Date.parse(row.updatedAt)

  it('is a strong tag of etagc characters made of the row and the representation, the same every time', () => {
    declareRepresentation('etag-test-a', [Type.Object({ title: Type.String() }, { $id: 'EtagTestA' })])
    const tag = resourceEtag('etag-test-a', row, at, 2, '/v2')
    assert.match(tag, /^"[\x21\x23-\x7e]+"$/)
    assert.equal(resourceEtag('etag-test-a', { ...row }, at, 2, '/v2'), tag)
  })

  it('changes with the revision, updated_at, the version and the link base', () => {
    declareRepresentation('etag-test-b', [Type.Object({ title: Type.String() }, { $id: 'EtagTestB' })])
    const tags = [
      resourceEtag('etag-test-b', row, at, 1, ''),
      resourceEtag('etag-test-b', { ...row, revision: 4 }, at, 1, ''),
      resourceEtag('etag-test-b', row, at + 1, 1, ''),
      resourceEtag('etag-test-b', row, at, 2, ''),
      resourceEtag('etag-test-b', row, at, 1, '/v1'),
      resourceEtag('etag-test-b', { ...row, id: 8 }, at, 1, ''),
    ]
    assert.equal(new Set(tags).size, tags.length)
  })

  it('changes when the representation\'s schemas change (a field added), for the same stored revision', () => {
    declareRepresentation('etag-test-c', [Type.Object({ title: Type.String() }, { $id: 'EtagTestC' })])
    const before = resourceEtag('etag-test-c', row, at, 2, '')
    declareRepresentation('etag-test-c', [Type.Object({ title: Type.String(), slug: Type.String() }, { $id: 'EtagTestC' })])
    const after = resourceEtag('etag-test-c', row, at, 2, '')
    assert.notEqual(after, before)
    declareRepresentation('etag-test-c', [Type.Object({ title: Type.String() }, { $id: 'EtagTestC' })])
    assert.equal(resourceEtag('etag-test-c', row, at, 2, ''), before, 'the same schemas give the same tag (every instance agrees)')
  })
})
