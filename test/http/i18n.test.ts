import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { PROBLEMS } from '../../src/errors.ts'
import { PROBLEM_TRANSLATIONS, problemLanguage } from '../../src/errors-i18n.ts'
import { buildTestApp, json, type TestApp } from '../helper.ts'

describe('localised problems (Accept-Language)', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite') })
  after(async () => { await t.close() })

  it('answers in English by default, with Content-Language and Vary', async () => {
    const res = await t.request({ method: 'GET', url: '/posts/999' })
    assert.equal(res.headers['content-language'], 'en')
    assert.match(String(res.headers.vary), /Accept-Language/)
    assert.equal(json(res).title, PROBLEMS.POST_NOT_FOUND.title)
  })

  for (const [header, lang] of [['de', 'de'], ['fr-CA, en;q=0.5', 'fr'], ['es', 'es'], ['es;q=0.5, de;q=0.9', 'de'], ['ja, *;q=0.1', 'en'], ['xx', 'en']] as const) {
    it(`Accept-Language: ${header} → ${lang}`, async () => {
      const res = await t.request({ method: 'GET', url: '/posts/999', headers: { 'accept-language': header } })
      assert.equal(res.statusCode, 404)
      assert.equal(res.headers['content-language'], lang)
      const p = json(res)
      const expected = lang === 'en' ? PROBLEMS.POST_NOT_FOUND.title : PROBLEM_TRANSLATIONS[lang].POST_NOT_FOUND.title
      assert.equal(p.title, expected)
      assert.equal(p.code, 'POST_NOT_FOUND', 'codes never change with the language')
    })
  }

  it('translates 422s too, keeping errors[] codes stable', async () => {
    const res = await t.request({ method: 'POST', url: '/posts', headers: { ...(await t.auth('alice')), 'accept-language': 'fr' }, payload: { title: '' } })
    const p = json(res)
    assert.equal(p.title, 'Échec de la validation')
    assert.deepEqual(p.errors.map((e: { code: string }) => e.code).sort(), ['BLANK', 'REQUIRED'])
  })

  it('has every code in every language, each text its own', () => {
    for (const [lang, table] of Object.entries(PROBLEM_TRANSLATIONS)) {
      assert.deepEqual(Object.keys(table).sort(), Object.keys(PROBLEMS).sort(), lang)
      for (const [code, text] of Object.entries(table)) {
        assert.ok(text.title.length > 0 && text.detail.length > 0, `${lang} ${code}`)
        assert.notEqual(text.title, PROBLEMS[code as keyof typeof PROBLEMS].title, `${lang} ${code} is translated`)
      }
    }
    assert.equal(problemLanguage(undefined), 'en')
    assert.equal(problemLanguage('de;q=0'), 'en')
  })
})
