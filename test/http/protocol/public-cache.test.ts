import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BUSY_GAP_MS, FRESH_MS, PublicCache } from '../../../src/http/protocol/public-cache.ts'

describe('PublicCache', () => {
  const page = (body: string) => ({ status: 200, headers: {}, body, etag: '"e"' })
  const now = () => performance.now()

  it('keeps answers within its bounds, the least recently used out first', () => {
    const cache = new PublicCache(2 * 1024 * 1024, 3, now)
    for (const k of ['a', 'b', 'c']) assert.ok(cache.keep(k, cache.generation, page(k)))
    cache.find('a')
    cache.keep('d', cache.generation, page('d'))
    assert.equal(cache.find('b'), undefined)
    assert.ok(cache.find('a') !== undefined && cache.find('d') !== undefined)
    assert.equal(cache.count, 3)
  })

  it('keeps an answer of just its entry bound, not one byte over', () => {
    const cache = new PublicCache(2 * 1024 * 1024, 10, now)
    // What an entry weighs besides its body: twice its key, and 64 bytes.
    const overhead = 2 * 'k'.length + 64
    assert.ok(cache.keep('k', cache.generation, page('x'.repeat(cache.maxEntryBytes - overhead))))
    assert.equal(cache.keep('k', cache.generation, page('x'.repeat(cache.maxEntryBytes - overhead + 1))), false)
  })

  it('does not keep an answer made before the last clear', () => {
    const cache = new PublicCache(1024 * 1024, 10, now)
    const generation = cache.generation
    cache.clear()
    assert.equal(cache.keep('a', generation, page('old')), false)
    assert.equal(cache.find('a'), undefined)
  })

  it('answers nothing from memory once the event log was last read more than a second ago', () => {
    let lastRead = performance.now()
    const cache = new PublicCache(1024 * 1024, 10, () => lastRead)
    cache.keep('a', cache.generation, page('a'))
    lastRead = performance.now() - (FRESH_MS - 100)
    assert.ok(cache.find('a') !== undefined, 'read 0.9 s ago: answered')
    lastRead = performance.now() - (FRESH_MS + 100)
    assert.equal(cache.find('a'), undefined, 'read 1.1 s ago: not answered')
    lastRead = performance.now()
    assert.ok(cache.find('a') !== undefined, 'read again: answered again')
  })
})

describe('PublicCache under frequent changes', () => {
  const page = (body: string) => ({ status: 200, headers: {}, body, etag: '"e"' })

  it('keeps nothing within BUSY_GAP_MS of a change while changes come more often than that, and keeps again once they pause', async () => {
    const cache = new PublicCache(1024 * 1024, 100, () => performance.now())
    // A change now and then: an answer made just after one is kept.
    cache.clear()
    assert.ok(cache.keep('calm', cache.generation, page('a')))
    // Changes a millisecond apart, as under a write every few requests.
    for (let i = 0; i < 30; i++) {
      cache.clear()
      await new Promise(resolve => setTimeout(resolve, 1))
    }
    assert.equal(cache.keep('busy', cache.generation, page('b')), false, 'just after a change, among many')
    // Real time on purpose: the rule is the time since the last change.
    await new Promise(resolve => setTimeout(resolve, BUSY_GAP_MS + 10))
    assert.ok(cache.keep('busy', cache.generation, page('b')), 'once BUSY_GAP_MS passed with no change')
  })
})
