import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { ImageFacts } from '../../../src/http/contract/resources.ts'
import type { Post, PostInput } from '../../../src/resources/posts/post.ts'
import { newPostWrite, postWrite } from '../../../src/resources/posts/post-write.ts'

const now = new Date('2026-03-01T12:00:00.000Z')
const input = (fields: Partial<PostInput> = {}): PostInput => ({ title: 'Crème brûlée', content: 'Some *text*', status: 'published', tags: [], excerpt: null, ...fields })

/** A stored post, as the store gives one back. */
function post (fields: Partial<Post> = {}): Post {
  return {
    id: 1,
    title: 'Crème brûlée',
    content: 'Some *text*',
    status: 'published',
    publishAt: null,
    author: 'alice',
    authors: [],
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    revision: 1,
    slug: 'creme-brulee',
    tags: ['a'],
    excerpt: 'Some text',
    excerptDerived: true,
    contentHtml: '<p>Some <em>text</em></p>\n',
    publishedAt: '2026-01-01T00:00:00.000Z',
    featureImage: null,
    metaTitle: null,
    metaDescription: null,
    canonicalUrl: null,
    ...fields,
  }
}

// The rules a write derives are decided here, once; the store keeps what they decide
// (test/resources/posts/posts-store.test.ts: "stores a write as it is given").
describe('what a new post writes (newPostWrite)', () => {
  it('derives the slug from the title, renders the HTML and the excerpt, and sets published_at when published', () => {
    const w = newPostWrite(input(), now)
    assert.deepEqual(w.slug, { derived: 'creme-brulee' })
    assert.equal(w.contentHtml, '<p>Some <em>text</em></p>\n')
    assert.equal(w.excerpt, 'Some text')
    assert.equal(w.excerptDerived, true)
    assert.equal(w.publishedAt, now.toISOString())
    assert.deepEqual(w.tags, [])
    assert.equal(w.featureImage, null)
  })

  it('claims a given slug as given, keeps a given excerpt, and leaves a draft unpublished', () => {
    const w = newPostWrite(input({ slug: 'mine', excerpt: 'Chosen', status: 'draft' }), now)
    assert.deepEqual(w.slug, { given: 'mine' })
    assert.equal(w.excerpt, 'Chosen')
    assert.equal(w.excerptDerived, false)
    assert.equal(w.publishedAt, null)
  })

  it('writes the feature image facts it is given', () => {
    const facts: ImageFacts = { id: 'img1', width: 10, height: 10, alt: '', placeholder: '', url: '/media/img1', srcset: '' }
    assert.deepEqual(newPostWrite(input(), now, { featureImage: facts }).featureImage, facts)
  })
})

describe('what a replace writes (postWrite)', () => {
  it('keeps a published_at once set, and sets none for a post never published', () => {
    assert.equal(postWrite(input(), post(), now).publishedAt, '2026-01-01T00:00:00.000Z')
    assert.equal(postWrite(input({ status: 'archived' }), post(), now).publishedAt, '2026-01-01T00:00:00.000Z')
    assert.equal(postWrite(input({ status: 'draft' }), post({ publishedAt: null, status: 'draft' }), now).publishedAt, null)
    assert.equal(postWrite(input(), post({ publishedAt: null, status: 'draft' }), now).publishedAt, now.toISOString())
  })

  it('claims a slug only when it changes, and writes the tags only when they change', () => {
    assert.equal(postWrite(input({ slug: 'creme-brulee', tags: ['a'] }), post(), now).slug, null)
    assert.equal(postWrite(input({ tags: ['a'] }), post(), now).tags, null)
    assert.deepEqual(postWrite(input({ slug: 'new-one', tags: ['b'] }), post(), now), { ...postWrite(input({ tags: ['b'] }), post(), now), slug: { given: 'new-one' } })
    assert.deepEqual(postWrite(input({ tags: ['b'] }), post(), now).tags, ['b'])
  })

  it('keeps an excerpt sent back as it was derived still derived, so it follows the content', () => {
    const w = postWrite(input({ content: 'New words', excerpt: 'Some text' }), post(), now)
    assert.equal(w.excerptDerived, true)
    assert.equal(w.excerpt, 'New words')
    assert.equal(w.contentHtml, '<p>New words</p>\n')
  })

  it('keeps the feature image unless the input names one', () => {
    assert.equal('featureImage' in postWrite(input(), post(), now), false)
    assert.equal(postWrite(input(), post(), now, { featureImage: null }).featureImage, null)
  })
})
