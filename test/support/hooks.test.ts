import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { before, beforeEach, closeWhenDone, once } from './hooks.ts'

// What the fixtures (buildTestApp, freshStore, …) rely on: each closes when what made it ends.
const events: string[] = []
async function fixture (name: string): Promise<void> {
  await Promise.resolve()
  events.push(`open ${name}`)
  closeWhenDone(async () => {
    await new Promise(resolve => setImmediate(resolve))
    events.push(`close ${name}`)
  })
}

describe('a suite that makes a fixture in before', () => {
  before(async () => {
    await fixture('suite')
    await fixture('suite, second')
  })
  after(() => { events.push('the suite\'s after') })

  it('has it open in its tests, and one a test makes until that test ends', async () => {
    await fixture('test')
    events.push('the test ran')
  })

  describe('nested', () => {
    before(async () => { await fixture('nested') })
    it('has both open', () => { events.push('the nested test ran') })
  })
})

describe('a suite that makes a fixture in beforeEach', () => {
  beforeEach(async () => { await fixture('each') })
  it('has one per test', () => { events.push('the first test ran') })
  it('and a new one for the next', () => { events.push('the second test ran') })
})

describe('fixtures that close themselves', () => {
  it('were closed when the test, the suite or the nested suite that made them ended, newest first', () => {
    assert.deepEqual(events, [
      'open suite',
      'open suite, second',
      'open test',
      'the test ran',
      'close test',
      'open nested',
      'the nested test ran',
      'close nested',
      'the suite\'s after',
      'close suite, second',
      'close suite',
      'open each',
      'the first test ran',
      'close each',
      'open each',
      'the second test ran',
      'close each',
    ])
  })

  it('close once, however often they are closed', async () => {
    let closed = 0
    const close = once(async () => { closed++ })
    await Promise.all([close(), close()])
    await close()
    assert.equal(closed, 1)
  })
})
