import assert from 'node:assert/strict'
import fs from 'node:fs'
import { it } from 'node:test'
import { ROLE_ACTIONS } from '../../src/domain/roles.ts'

it('docs/people.md\'s roles table is the code\'s one table of what each role may do', () => {
  const doc = fs.readFileSync(new URL('../../docs/people.md', import.meta.url), 'utf8')
  const section = doc.slice(doc.indexOf('| action | least role |'))
  const rows = section.split('\n').slice(2).filter(l => l.startsWith('|')).map(l => l.split('|').slice(1, -1).map(c => c.trim()))
  assert.deepEqual(rows, Object.values(ROLE_ACTIONS).map(a => [a.description, a.least]))
})
