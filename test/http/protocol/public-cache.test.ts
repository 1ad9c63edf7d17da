import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FRESH_MS, PublicCache } from '../../../src/http/protocol/public-cache.ts'

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
