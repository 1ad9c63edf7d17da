import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { catalogueOf } from '../../../src/context.ts'
import { PROBLEM_LANGUAGES, problemLanguage } from '../../../src/errors-i18n.ts'
import type { Message, MessageKey, MessageParams } from '../../../src/messages.ts'
import { buildTestApp, json, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const catalogue = catalogueOf()
const PROBLEMS = catalogue.problems
const PROBLEM_TRANSLATIONS = catalogue.translations

describe('localised problems (Accept-Language)', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite') })

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

  describe('errors[] messages', () => {
    type Entry = { field: string, code: string, message: string }
    const entries = async (opts: Parameters<TestApp['request']>[0], lang: string): Promise<Record<string, Entry>> => {
      const res = await t.request({ ...opts, headers: { ...opts.headers, 'accept-language': lang } })
      assert.equal(res.statusCode, 422, res.body)
      assert.equal(res.headers['content-language'], lang)
      return Object.fromEntries((json(res).errors as Entry[]).map(e => [e.field, e]))
    }
    const createPost = async (payload: object) => ({ method: 'POST' as const, url: '/posts', headers: await t.auth('alice'), payload })
    const placeOrder = async (payload: object) => ({ method: 'POST' as const, url: '/orders', headers: await t.auth('olga', ['orders:write']), payload })

    it('word a post\'s violations from the schema\'s rules, in English and in German', async () => {
      const bad = await createPost({ title: '   ', content: 5, status: 'hidden', colour: 'red' })
      const en = await entries(bad, 'en')
      assert.deepEqual(Object.fromEntries(Object.values(en).map(e => [e.field, e.message])), {
        title: 'must not be blank',
        content: 'must be a string',
        status: 'must be one of: draft, published, archived, scheduled',
        colour: 'is not a member of this resource',
      })
      const de = await entries(bad, 'de')
      assert.deepEqual(Object.fromEntries(Object.values(de).map(e => [e.field, e.message])), {
        title: 'darf nicht leer sein',
        content: 'muss eine Zeichenkette sein',
        status: 'muss einer dieser Werte sein: draft, published, archived, scheduled',
        colour: 'ist kein Feld dieser Ressource',
      })
      for (const field of Object.keys(en)) assert.equal(de[field]!.code, en[field]!.code, `${field}: the code does not change with the language`)
    })

    it('name the limit a title passes by one character: 200 is created, 201 is "at most 200 characters" (en, fr)', async () => {
      const ok = await t.request(await createPost({ title: 'x'.repeat(200), content: '' }))
      assert.equal(ok.statusCode, 201)
      const tooLong = await createPost({ title: 'x'.repeat(201), content: '' })
      assert.deepEqual((await entries(tooLong, 'en')).title, { field: 'title', code: 'TOO_LONG', message: 'must be at most 200 characters' })
      assert.deepEqual((await entries(tooLong, 'fr')).title, { field: 'title', code: 'TOO_LONG', message: 'doit compter au plus 200 caractères' })
    })

    it('name nested members by their path (items/0/quantity) and never show a pattern (en, es)', async () => {
      const bad = await placeOrder({ customer_email: 'nobody', items: [{ sku: '  ', quantity: 0 }, { sku: 'B', quantity: -2 }] })
      const en = await entries(bad, 'en')
      assert.deepEqual(en['items/0/sku'], { field: 'items/0/sku', code: 'INVALID_FORMAT', message: 'must not be blank' })
      assert.deepEqual(en['items/0/quantity'], { field: 'items/0/quantity', code: 'OUT_OF_RANGE', message: 'must be at least 1' })
      assert.deepEqual(en['items/1/quantity'], { field: 'items/1/quantity', code: 'NEGATIVE_VALUE', message: 'must be at least 1' })
      assert.deepEqual(en.customer_email, { field: 'customer_email', code: 'INVALID_EMAIL', message: 'must be an e-mail address' })
      const es = await entries(bad, 'es')
      assert.equal(es['items/0/sku']!.message, 'no debe estar en blanco')
      assert.equal(es['items/0/quantity']!.message, 'debe ser al menos 1')
      assert.equal(es.customer_email!.message, 'debe ser una dirección de correo electrónico')
    })

    it('name query parameters by their name (en, de)', async () => {
      const bad = { method: 'GET' as const, url: '/posts?limit=101&colour=red' }
      assert.deepEqual(Object.values(await entries(bad, 'en')).map(e => `${e.field}: ${e.message}`).sort(), [
        'colour: is not a query parameter of this endpoint',
        'limit: must be at most 100',
      ])
      assert.equal((await entries({ method: 'GET', url: '/posts?page=0x1' }, 'en')).page?.message, 'must be an integer written in decimal digits')
      const de = await entries({ method: 'GET', url: '/posts?limit=0' }, 'de')
      assert.equal(de.limit?.message, 'muss mindestens 1 sein')
      const sort = await entries({ method: 'GET', url: '/posts?sort=colour' }, 'de')
      assert.match(sort.sort?.message ?? '', /^„colour“ ist kein Sortierschlüssel; verwenden Sie einen von id, title, created_at, updated_at(, [a-z_]+)*$/)
    })

    it('never pass on the validator\'s own words, in any language', async () => {
      const requests = [
        await createPost({ title: '', content: null, status: 3, extra: 1 }),
        await createPost([]),
        await placeOrder({ customer_email: 7, items: [{ sku: 'x'.repeat(65), quantity: 1.5 }, {}] }),
        await placeOrder({ customer_email: 'a@b.example', items: [] }),
        { method: 'GET' as const, url: '/posts?limit=abc&status=nope&sort=-id,id' },
        { method: 'GET' as const, url: '/posts/0' },
      ]
      for (const lang of PROBLEM_LANGUAGES) {
        for (const req of requests) {
          const res = await t.request({ ...req, headers: { ...(req as { headers?: Record<string, string> }).headers, 'accept-language': lang } })
          assert.equal(res.statusCode, 422, `${req.url} ${res.body}`)
          for (const e of json(res).errors as Entry[]) {
            assert.doesNotMatch(e.message, /pattern|must NOT|must have required|must match|should|equal to one of|\\S|\{|\}/, `${lang} ${req.url} ${e.field}: ${e.message}`)
            assert.ok(e.message.length > 0)
          }
        }
      }
    })

    it('has every message in every language, each its own words', () => {
      const samples: { [K in MessageKey]: MessageParams[K] } = {
        REQUIRED: {},
        BODY_REQUIRED: {},
        UNKNOWN_MEMBER: {},
        UNKNOWN_PARAMETER: {},
        TYPE: { types: ['string', 'null'] },
        DECIMAL_INTEGER: {},
        BLANK: {},
        MIN_LENGTH: { limit: 2 },
        MAX_LENGTH: { limit: 1 },
        MIN_ITEMS: { limit: 1 },
        MAX_ITEMS: { limit: 20 },
        DUPLICATE_ITEMS: {},
        MINIMUM: { limit: 1 },
        MAXIMUM: { limit: 100 },
        ABOVE: { limit: 0 },
        BELOW: { limit: 9 },
        ONE_OF: { allowed: ['a', 'b'] },
        EQUAL: { value: 'x' },
        EMAIL: {},
        DATE_TIME: {},
        DATE: {},
        URL: {},
        UUID: {},
        FORMAT: {},
        INVALID: {},
        NUL_CHARACTER: {},
        SORT_DIRECTION: { value: 'up' },
        SORT_KEY: { value: 'k', allowed: ['id'] },
        SORT_REPEATED: { value: 'id' },
        SYNONYMS_DIFFER: { a: 'limit', b: 'per_page' },
        PAGING_CONFLICT: { a: 'page', b: 'cursor' },
        UNKNOWN_FIELD_NAME: { value: 'f', allowed: ['id'] },
        NO_INCLUDES: {},
        UNKNOWN_INCLUDE: { value: 'x', allowed: ['items'] },
        ID_ASSIGNED: {},
        ID_MISMATCH: { sent: 1, path: 2 },
        SERVICE_SET: {},
        URL_SCHEME: {},
        URL_CREDENTIALS: {},
        HOST_UNRESOLVED: { host: 'h.invalid' },
        ADDRESS_REFUSED: { address: '10.0.0.1', kind: 'private' },
        NO_WEBHOOK_SECRET: {},
      }
      for (const [key, params] of Object.entries(samples)) {
        const m = { key, params } as Message
        const english = catalogue.word(m, 'en')
        for (const lang of PROBLEM_LANGUAGES) {
          const text = catalogue.word(m, lang)
          assert.ok(text.length > 0 && !text.includes('undefined') && !text.includes('[object'), `${lang} ${key}: ${text}`)
          if (lang !== 'en') assert.notEqual(text, english, `${lang} ${key} is translated`)
        }
      }
    })
  })
})
