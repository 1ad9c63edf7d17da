import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { NewPostWrite, Post, PostSortKey, PostStatus } from '../../../src/resources/posts/post.ts'
import { sortValuesOf as postSortValues } from '../../../src/http/toolkit/paging.ts'
import type { Principal, Viewer } from '../../../src/domain/principal.ts'
import type { PostFilter } from '../../../src/resources/posts/store.ts'
import type { ListQuery, SortTerm, Store } from '../../../src/store/store.ts'
import { storeKinds } from '../../helper.ts'
import { createPost, writeOver } from '../../support/posts.ts'
import { useFreshStore } from '../../support/store.ts'

function principal (subject: string, scopes: string[] = ['posts:write']): Principal {
  return { subject, scopes: new Set(scopes), kind: 'jwt' }
}

const alice = principal('alice')
const bob = principal('bob')
const admin = principal('root', ['admin'])

/** Byte order of UTF-8, which is what both stores sort titles by (SQLite BINARY, PostgreSQL "C"). */
function compareValues (a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  return Buffer.compare(Buffer.from(String(a)), Buffer.from(String(b)))
}

function expectedOrder (posts: Post[], sort: readonly SortTerm<PostSortKey>[]): number[] {
  return [...posts].sort((x, y) => {
    const xv = postSortValues(x, sort)
    const yv = postSortValues(y, sort)
    for (let i = 0; i < sort.length; i++) {
      const c = compareValues(xv[i]!, yv[i]!)
      if (c !== 0) return sort[i]!.direction === 'asc' ? c : -c
    }
    return 0
  }).map(p => p.id)
}

function withId (...terms: [PostSortKey, 'asc' | 'desc'][]): SortTerm<PostSortKey>[] {
  const sort = terms.map(([key, direction]) => ({ key, direction }))
  if (!sort.some(t => t.key === 'id')) sort.push({ key: 'id', direction: sort.at(-1)!.direction })
  return sort
}

type Q = Omit<ListQuery<PostSortKey, PostFilter>, 'filter' | 'sort' | 'limit'> & { filter?: PostFilter, sort?: SortTerm<PostSortKey>[], limit?: number }

function query (q: Q = {}): ListQuery<PostSortKey, PostFilter> {
  return { filter: {}, sort: withId(['created_at', 'desc']), limit: 100, ...q }
}

async function ids (store: Store, viewer: Viewer, q: Q = {}): Promise<number[]> {
  return (await store.posts.list(query(q), viewer)).items.map(p => p.id)
}

for (const kind of await storeKinds()) {
  describe(`post store [${kind}]`, () => {
    const f = useFreshStore(kind)
    let store: Store
    before(() => { store = f.store })

    describe('create and findById', () => {
      it('stores a post the service made and reads it back alike', async () => {
        // The slug, HTML, excerpt and published_at are what the rules of posts decided (post-write.ts).
        const now = new Date('2024-05-01T10:20:30.456Z')
        const post = await createPost(store, { title: 'Hello', content: 'World', status: 'published' }, { now })
        assert.ok(Number.isInteger(post.id) && post.id >= 1)
        assert.equal(typeof post.id, 'number', 'BIGINT ids come back as numbers')
        assert.deepEqual(post, {
          id: post.id,
          title: 'Hello',
          content: 'World',
          status: 'published',
          publishAt: null,
          author: 'alice',
          authors: [],
          createdAt: now.toISOString(),
          updatedAt: now.toISOString(),
          revision: 1,
          slug: 'hello',
          tags: [],
          excerpt: 'World',
          excerptDerived: true,
          contentHtml: '<p>World</p>\n',
          featureImage: null,
          metaTitle: null,
          metaDescription: null,
          canonicalUrl: null,
          publishedAt: now.toISOString(),
        })
        assert.deepEqual(await store.posts.findById(post.id, null), post)
      })

      it('shows drafts and archived posts only to their author and to admin', async () => {
        const now = new Date()
        for (const status of ['draft', 'archived'] as const) {
          const p = await createPost(store, { title: status, content: '', status }, { now })
          assert.equal(await store.posts.findById(p.id, null), null, 'anonymous')
          assert.equal(await store.posts.findById(p.id, bob), null, 'another author')
          assert.equal((await store.posts.findById(p.id, alice))?.id, p.id, 'the author')
          assert.equal((await store.posts.findById(p.id, admin))?.id, p.id, 'admin')
        }
      })

      it('stores a write as it is given: the slug, HTML, excerpt and published_at are what the write says', async () => {
        // Values no rule of posts would derive from this title and content: the store derives nothing.
        const now = new Date('2024-05-02T00:00:00.000Z')
        const write: NewPostWrite = {
          title: 'A title',
          content: '# Heading',
          status: 'published',
          slug: { given: 'not-the-title' },
          tags: ['Kept'],
          authors: [],
          excerpt: 'an excerpt of no content',
          excerptDerived: true,
          contentHtml: '<p>not the content rendered</p>',
          publishedAt: null,
          publishAt: null,
          metaTitle: null,
          metaDescription: null,
          canonicalUrl: null,
          featureImage: null,
        }
        const post = await store.posts.create(write, 'alice', now)
        const stored = { slug: 'not-the-title', tags: ['Kept'], excerpt: write.excerpt, excerptDerived: true, contentHtml: write.contentHtml, publishedAt: null }
        assert.deepEqual({ slug: post.slug, tags: post.tags, excerpt: post.excerpt, excerptDerived: post.excerptDerived, contentHtml: post.contentHtml, publishedAt: post.publishedAt }, stored)
        assert.deepEqual(await store.posts.findById(post.id, null), post)
        const based = await store.posts.create({ ...write, slug: { derived: 'a-base' } }, 'alice', now)
        assert.equal(based.slug, 'a-base', 'a derived slug is the base the write names, not one from the title')

        // A replace keeps what it is given too, a published_at that was set replaced or cleared included.
        const later = new Date('2024-05-03T00:00:00.000Z')
        const over = { ...write, slug: null, tags: null, contentHtml: '<p>other</p>', excerpt: 'other', excerptDerived: false, publishedAt: '2020-01-01T00:00:00.000Z' }
        const r = await store.posts.replace(post.id, over, post.revision, later)
        assert.ok(r.outcome === 'done')
        assert.deepEqual(r.value, { ...post, contentHtml: '<p>other</p>', excerpt: 'other', excerptDerived: false, publishedAt: '2020-01-01T00:00:00.000Z', updatedAt: later.toISOString(), revision: 2 })
        const cleared = await store.posts.replace(post.id, { ...over, publishedAt: null }, 2, later)
        assert.ok(cleared.outcome === 'done')
        assert.equal(cleared.value.publishedAt, null)
      })

      it('answers null for an id that does not exist', async () => {
        assert.equal(await store.posts.findById(987654321, admin), null)
      })
    })

    describe('replace and delete', () => {
      it('replaces at the expected revision and bumps it', async () => {
        const p = await createPost(store, { title: 'a', content: 'b', status: 'draft' }, { now: new Date('2024-01-01T00:00:00.000Z') })
        const later = new Date('2024-01-02T00:00:00.001Z')
        const r = await store.posts.replace(p.id, writeOver(p, { title: 'c', content: 'd', status: 'published' }, later), 1, later)
        assert.equal(r.outcome, 'done')
        assert.ok(r.outcome === 'done')
        const derived = { excerpt: 'd', contentHtml: '<p>d</p>\n', publishedAt: later.toISOString() }
        assert.deepEqual(r.value, { ...p, title: 'c', content: 'd', status: 'published', updatedAt: later.toISOString(), revision: 2, ...derived })
        assert.deepEqual(await store.posts.findById(p.id, null), r.value)
      })

      it('answers stale for an old revision and missing for a gone row, changing nothing', async () => {
        const p = await createPost(store, { title: 'a', content: 'b', status: 'published' })
        const x = writeOver(p, { title: 'x', content: '' })
        assert.deepEqual(await store.posts.replace(p.id, x, 7, new Date()), { outcome: 'stale' })
        assert.deepEqual(await store.posts.delete(p.id, 7), { outcome: 'stale' })
        assert.deepEqual(await store.posts.findById(p.id, null), p)
        assert.deepEqual(await store.posts.delete(p.id, 1), { outcome: 'done', value: true })
        assert.equal(await store.posts.findById(p.id, admin), null)
        assert.deepEqual(await store.posts.delete(p.id, 1), { outcome: 'missing' })
        assert.deepEqual(await store.posts.replace(p.id, x, 1, new Date()), { outcome: 'missing' })
      })

      it('lets exactly one of several concurrent replaces at one revision win', async () => {
        const p = await createPost(store, { title: 'race', content: '', status: 'published' })
        const results = await Promise.all(Array.from({ length: 8 }, (_, i) =>
          store.posts.replace(p.id, writeOver(p, { title: `writer ${i}` }), 1, new Date())))
        const done = results.filter(r => r.outcome === 'done')
        assert.equal(done.length, 1)
        assert.equal(results.filter(r => r.outcome === 'stale').length, 7)
        const now = await store.posts.findById(p.id, null)
        assert.equal(now?.revision, 2)
        assert.equal(now?.title, done[0]!.outcome === 'done' ? done[0]!.value.title : '')
      })
    })
  })

  describe(`post store lists [${kind}]`, () => {
    const f = useFreshStore(kind)
    let store: Store
    let all: Post[]
    before(async () => {
      store = f.store
      // Titles that differ in case, accents, punctuation and repeat; timestamps that repeat,
      // so that the id tie-breaker decides.
      const titles = ['banana', 'Banana', 'apple', 'Äpfel', 'zebra', '_under', 'a b', 'apple', 'Zulu', 'éclair', '123', 'apple pie']
      const statuses: PostStatus[] = ['published', 'published', 'draft', 'published', 'archived']
      const authors = ['alice', 'bob', 'carol']
      const base = Date.parse('2024-03-01T00:00:00.000Z')
      for (let i = 0; i < 37; i++) {
        const created = new Date(base + Math.floor(i / 3) * 1000 + (i % 2))
        const p = await createPost(store, { title: titles[i % titles.length]!, content: `post ${i}`, status: statuses[i % statuses.length]! }, { author: authors[i % authors.length]!, now: created })
        if (i % 4 === 0) {
          const edited = new Date(base + 100_000 - Math.floor(i / 8) * 1000)
          await store.posts.replace(p.id, writeOver(p, { content: `post ${i} edited` }, edited), 1, edited)
        }
      }
      all = (await store.posts.list(query({ sort: withId(['id', 'asc']) }), admin)).items
      assert.equal(all.length, 37)
    })

    const sorts: SortTerm<PostSortKey>[][] = []
    for (const key of ['id', 'title', 'created_at', 'updated_at'] as const) {
      for (const dir of ['asc', 'desc'] as const) sorts.push(withId([key, dir]))
    }
    sorts.push(withId(['title', 'asc'], ['created_at', 'desc']), withId(['updated_at', 'desc'], ['title', 'asc']))

    const viewers: [string, Viewer, (p: Post) => boolean][] = [
      ['anonymous', null, p => p.status === 'published'],
      ['an author', alice, p => p.status === 'published' || p.author === 'alice'],
      ['admin', admin, () => true],
    ]

    for (const sort of sorts) {
      const name = sort.map(t => `${t.key} ${t.direction}`).join(', ')
      for (const [who, viewer, sees] of viewers) {
        it(`sorts by ${name} for ${who}, and keyset pages forwards and backwards give every row once`, async () => {
          const expected = expectedOrder(all.filter(sees), sort)
          assert.deepEqual(await ids(store, viewer, { sort }), expected, 'one page')

          const forward: number[] = []
          let page = await store.posts.list(query({ sort, limit: 5 }), viewer)
          forward.push(...page.items.map(p => p.id))
          while (page.more) {
            page = await store.posts.list(query({ sort, limit: 5, after: postSortValues(page.items.at(-1)!, sort) }), viewer)
            forward.push(...page.items.map(p => p.id))
          }
          assert.deepEqual(forward, expected, 'after')

          // Backwards from past the last row: `before` the last row, then before each page's first.
          const last = all.find(p => p.id === expected.at(-1))!
          const backward: number[] = [last.id]
          page = await store.posts.list(query({ sort, limit: 5, before: postSortValues(last, sort) }), viewer)
          backward.unshift(...page.items.map(p => p.id))
          while (page.more) {
            page = await store.posts.list(query({ sort, limit: 5, before: postSortValues(page.items[0]!, sort) }), viewer)
            backward.unshift(...page.items.map(p => p.id))
          }
          assert.deepEqual(backward, expected, 'before')

          const offset: number[] = []
          for (let o = 0; o < expected.length + 5; o += 5) {
            const p = await store.posts.list(query({ sort, limit: 5, offset: o }), viewer)
            assert.equal(p.more, o + 5 < expected.length)
            offset.push(...p.items.map(x => x.id))
          }
          assert.deepEqual(offset, expected, 'offset')
        })
      }
    }

    it('counts every matching row when asked, and only then', async () => {
      const page = await store.posts.list(query({ limit: 2, count: true }), null)
      assert.equal(page.total, all.filter(p => p.status === 'published').length)
      assert.equal(typeof page.total, 'number')
      assert.equal((await store.posts.list(query({ limit: 2 }), null)).total, undefined)
      assert.equal((await store.posts.list(query({ limit: 2, count: true, filter: { status: 'draft' } }), admin)).total, all.filter(p => p.status === 'draft').length)
    })

    it('filters by status within what the viewer may see', async () => {
      for (const status of ['draft', 'published', 'archived'] as const) {
        const want = (sees: (p: Post) => boolean) => expectedOrder(all.filter(p => p.status === status && sees(p)), withId(['created_at', 'desc']))
        assert.deepEqual(await ids(store, admin, { filter: { status } }), want(() => true))
        assert.deepEqual(await ids(store, alice, { filter: { status } }), want(p => p.status === 'published' || p.author === 'alice'))
        assert.deepEqual(await ids(store, null, { filter: { status } }), want(p => p.status === 'published'))
      }
    })
  })

  describe(`post store full-text search [${kind}]`, () => {
    const f = useFreshStore(kind)
    let store: Store
    before(() => { store = f.store })

    /** Searches once the full-text index has taken every write, as the indexer job leaves it. */
    const search = async (q: string, viewer: Viewer = admin) => {
      while (await store.transaction(async uow => await uow.posts.indexSearch(100)) > 0);
      return await ids(store, viewer, { filter: { q }, sort: withId(['id', 'asc']) })
    }

    it('matches title and content, case-insensitively, when every word matches', async () => {
      const now = new Date()
      const fox = await createPost(store, { title: 'The quick fox', content: 'jumps over the lazy dog', status: 'published' }, { now })
      const cat = await createPost(store, { title: 'A cat', content: 'sleeps; quick it is not', status: 'published' }, { now })
      const hidden = await createPost(store, { title: 'Quick draft', content: 'fox', status: 'draft' }, { author: 'bob', now })
      assert.deepEqual(await search('quick'), [fox.id, cat.id, hidden.id])
      assert.deepEqual(await search('QUICK fox'), [fox.id, hidden.id])
      assert.deepEqual(await search('fox dog'), [fox.id], 'a word from the title and one from the content')
      assert.deepEqual(await search('fox unicorn'), [], 'every word must match')
      assert.deepEqual(await search('quick', null), [fox.id, cat.id], 'visibility still applies')
      assert.deepEqual(await search('"fox" OR -cat*'), [], 'search syntax is not interpreted')
    })

    it('follows replace and delete', async () => {
      const p = await createPost(store, { title: 'walrus', content: 'tusks', status: 'published' })
      // SQLite indexes after the commit (the write queues its post); PostgreSQL with the write.
      assert.equal(await store.posts.searchBacklog(), kind === 'sqlite' ? 1 : 0)
      assert.deepEqual(await search('walrus'), [p.id])
      assert.equal(await store.posts.searchBacklog(), 0)
      const r = await store.posts.replace(p.id, writeOver(p, { title: 'narwhal' }), 1, new Date())
      assert.equal(r.outcome, 'done')
      assert.deepEqual(await search('walrus'), [])
      assert.deepEqual(await search('narwhal tusks'), [p.id])
      assert.equal((await store.posts.delete(p.id, 2)).outcome, 'done')
      assert.deepEqual(await search('narwhal'), [])
      assert.deepEqual(await search('tusks'), [])
    })

    it('counts search results', async () => {
      const page = await store.posts.list(query({ filter: { q: 'quick' }, count: true, limit: 1 }), null)
      assert.equal(page.total, 2)
      assert.equal(page.items.length, 1)
      assert.equal(page.more, true)
    })
  })
}
