import { Type } from '@sinclair/typebox'
import jsonpatch from 'fast-json-patch'
import { AppError } from '../../errors.ts'
import { JSON_PATCH, MERGE_PATCH } from '../pipeline/content-type.ts'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

function isObject (v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** RFC 7396 §2, as written: objects merge member by member, `null` removes, anything else replaces. */
export function applyMergePatch (target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch
  const result: Record<string, Json> = isObject(target) ? { ...target } : {}
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name]
    // defineProperty, not assignment: a member named "__proto__" stays an own member (and is then
    // reported as an unknown field) instead of replacing the result's prototype.
    else Object.defineProperty(result, name, { value: applyMergePatch(Object.hasOwn(result, name) ? result[name] : undefined, value), enumerable: true, writable: true, configurable: true })
  }
  return result
}

export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test'
  path: string
  value?: Json
  from?: string
}

/**
 * RFC 6902 through fast-json-patch, atomically (the document is copied, never changed in place).
 * A failed `test` is 409 PATCH_TEST_FAILED (the state is not what the client expected, like a
 * failed If-Match); an operation that cannot apply is 422 INVALID_PATCH (RFC 5789 §2.2).
 */
export function applyJsonPatch (document: Json, operations: readonly JsonPatchOperation[]): Json {
  try {
    return jsonpatch.applyPatch(document, operations as jsonpatch.Operation[], true, false, true).newDocument as Json
  } catch (err) {
    if (err instanceof jsonpatch.JsonPatchError) {
      const where = err.operation ? ` (operation ${Number(err.index ?? 0)}: ${err.operation.op} ${err.operation.path})` : ''
      if (err.name === 'TEST_OPERATION_FAILED') throw new AppError('PATCH_TEST_FAILED', `A "test" operation did not match${where}; nothing was changed.`)
      throw new AppError('INVALID_PATCH', `${err.message.split('\n')[0] ?? 'The patch cannot be applied'}${where}.`)
    }
    // The library reports some refusals (a path through __proto__) as plain TypeErrors.
    throw new AppError('INVALID_PATCH', 'The patch cannot be applied to this resource.')
  }
}

export const JsonPatchSchema = Type.Array(Type.Object({
  op: Type.Union(['add', 'remove', 'replace', 'move', 'copy', 'test'].map(o => Type.Literal(o))),
  path: Type.String({ maxLength: 1024, description: 'JSON Pointer (RFC 6901).' }),
  value: Type.Optional(Type.Unknown()),
  from: Type.Optional(Type.String({ maxLength: 1024 })),
}, { additionalProperties: true, description: 'Members other than op, path, value and from are ignored (RFC 6902 §4).' }), { $id: 'JsonPatch', maxItems: 100, description: 'RFC 6902 JSON Patch.' })

export const MergePatchSchema = Type.Object({}, { $id: 'MergePatch', additionalProperties: true, description: 'RFC 7396 JSON Merge Patch: members to set; `null` removes (a removed status falls back to its default).' })

/** The PATCH body: the format is chosen by Content-Type. */
export const patchBodySchema = {
  content: {
    [MERGE_PATCH]: { schema: Type.Ref(MergePatchSchema) },
    [JSON_PATCH]: { schema: Type.Ref(JsonPatchSchema) },
  },
}

/** Applies the request's patch, in the format its Content-Type names, to `document`. */
export function applyPatch (contentType: string | undefined, document: Json, body: unknown): Json {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase()
  if (type === JSON_PATCH) return applyJsonPatch(document, body as JsonPatchOperation[])
  return applyMergePatch(document, body as Json)
}
