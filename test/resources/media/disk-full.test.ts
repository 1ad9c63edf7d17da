import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { buildTestApp, json, skipOutsideCI, type TestApp } from '../../helper.ts'
import { noisyJpeg, png } from './images.ts'
import { before } from '../../support/hooks.ts'

/** A file system of `kb` KiB mounted at `dir` (needs root and mount rights); false when it cannot be made. */
function smallDisk (dir: string, kb: number): boolean {
  if (process.getuid?.() !== 0) return false
  try {
    fs.mkdirSync(dir, { recursive: true })
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${kb}k`, 'tmpfs', dir], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-disk-full-'))
const mounted = smallDisk(path.join(dataDir, 'media'), 256)

describe('media on a full disk (sqlite)', { skip: skipOutsideCI(mounted ? false : 'a small tmpfs cannot be mounted (needs root)') }, () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite', { DATA_DIR: dataDir }) })
  after(async () => {
    await t.close()
    execFileSync('umount', [path.join(dataDir, 'media')])
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('stores what fits, and answers 503 with Retry-After for what does not, recording nothing and leaving no partial file', async () => {
    const headers = { ...(await t.auth('alice', ['media:write'])) }
    const small = await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/png' }, payload: await png() })
    assert.equal(small.statusCode, 201, small.body)
    const big = await t.request({ method: 'POST', url: '/media', headers: { ...headers, 'content-type': 'image/jpeg' }, payload: await noisyJpeg(800, 600) })
    assert.equal(big.statusCode, 503, big.body)
    assert.equal(json(big).code, 'SERVICE_UNAVAILABLE')
    assert.ok(big.headers['retry-after'])
    const list = json(await t.request({ method: 'GET', url: '/media', headers }))
    assert.equal(list.length, 1, 'only the one that fitted')
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'media', '.tmp')), [], 'no temporary file is left')
  })
})
