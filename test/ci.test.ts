import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { skipOutsideCI, underCI } from './helper.ts'

describe('CI detection in the test helper', () => {
  const saved = process.env.CI
  afterEach(() => {
    if (saved === undefined) delete process.env.CI
    else process.env.CI = saved
  })

  it('counts CI=true, CI=1 and other set values as CI', () => {
    for (const v of ['true', 'TRUE', '1', 'yes', 'github']) {
      process.env.CI = v
      assert.equal(underCI(), true, v)
    }
  })

  it('does not count an unset, empty, 0 or false CI', () => {
    for (const v of [undefined, '', '0', 'false']) {
      if (v === undefined) delete process.env.CI
      else process.env.CI = v
      assert.equal(underCI(), false, String(v))
    }
  })

  it('turns a skip into a failure under CI', () => {
    process.env.CI = '1'
    assert.throws(() => skipOutsideCI('no Chromium'), /CI is set but no Chromium/)
    assert.equal(skipOutsideCI(false), false)
    process.env.CI = '0'
    assert.equal(skipOutsideCI('no Chromium'), 'no Chromium')
  })
})
