import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'

type Serializer = (data: unknown) => string
type RouteDefinition = Parameters<ReturnType<ReturnType<typeof SerializerSelector>>>[0]

/**
 * Fastify's response serializers (fast-json-stringify), compiled on first use and shared by
 * every route whose response schema is the same. Compiling all of them up front (one per route,
 * status and version: several hundred, most of them problem bodies that are seldom sent) was
 * half of the start-up time.
 *
 * The key is the schema's JSON text: the shared schemas it may reference (`$ref`) are the same
 * for every route built by one factory, so equal text means an equal serializer.
 */
export function lazySerializers (): ReturnType<typeof SerializerSelector> {
  const select = SerializerSelector()
  return (externalSchemas, options) => {
    const compile = select(externalSchemas, options)
    const byText = new Map<string, Serializer>()
    return (route: RouteDefinition) => {
      const key = JSON.stringify(route.schema)
      let serializer = byText.get(key)
      if (serializer === undefined) {
        let compiled: Serializer | undefined
        serializer = data => (compiled ??= compile(route))(data)
        byText.set(key, serializer)
      }
      return serializer
    }
  }
}
