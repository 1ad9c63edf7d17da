import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BlobCache } from '../../../src/resources/media/library.ts'

const bytes = (n: number, fill = 1) => Buffer.alloc(n, fill)

describe('BlobCache', () => {
  it('loads a blob once and gives the kept copy after', async () => {
    const cache = new BlobCache(100)
    let loads = 0
    const load = async () => { loads++; return bytes(10) }
    assert.deepEqual(await cache.get('a', load), bytes(10))
    assert.deepEqual(await cache.get('a', load), bytes(10))
    assert.equal(loads, 1)
  })

  it('shares one load among concurrent misses', async () => {
    const cache = new BlobCache(100)
    let loads = 0
    const load = async () => { loads++; await new Promise(resolve => setTimeout(resolve, 10)); return bytes(10) }
    const all = await Promise.all(Array.from({ length: 5 }, async () => await cache.get('a', load)))
    assert.equal(loads, 1)
    assert.ok(all.every(b => b?.length === 10))
  })

  it('stays within its bytes, dropping the least recently read first; exactly full is kept', async () => {
    const cache = new BlobCache(30)
    const loads: string[] = []
    const loader = (key: string, n: number) => async () => { loads.push(key); return bytes(n) }
    await cache.get('a', loader('a', 10))
    await cache.get('b', loader('b', 10))
    await cache.get('c', loader('c', 10))
    await cache.get('a', loader('a', 10))
    assert.deepEqual(loads, ['a', 'b', 'c'], '30 bytes of 30: all kept')
    await cache.get('d', loader('d', 10))
    await cache.get('a', loader('a', 10))
    await cache.get('c', loader('c', 10))
    await cache.get('b', loader('b', 10))
    assert.deepEqual(loads, ['a', 'b', 'c', 'd', 'b'], 'b, the least recently read, went first')
  })

  it('keeps no blob larger than itself, no missing blob, and no failed load', async () => {
    const cache = new BlobCache(10)
    let loads = 0
    assert.equal((await cache.get('big', async () => { loads++; return bytes(11) }))?.length, 11)
    assert.equal((await cache.get('big', async () => { loads++; return bytes(11) }))?.length, 11)
    assert.equal(await cache.get('none', async () => { loads++; return null }), null)
    assert.equal(await cache.get('none', async () => { loads++; return null }), null)
    await assert.rejects(cache.get('bad', async () => { loads++; throw new Error('disk') }), /disk/)
    assert.equal((await cache.get('bad', async () => { loads++; return bytes(1) }))?.length, 1)
    assert.equal(loads, 6)
  })

  it('at 0 bytes keeps nothing', async () => {
    const cache = new BlobCache(0)
    let loads = 0
    await cache.get('a', async () => { loads++; return bytes(1) })
    await cache.get('a', async () => { loads++; return bytes(1) })
    assert.equal(loads, 2)
  })
})
