import type { ProblemLanguage } from './errors-i18n.ts'

/**
 * The texts of `errors[].message`, one template per kind of violated rule, in every language
 * problems speak. A message names no field (`field` does) and reads after it: `title` — "must not
 * be blank". The validator builds them from the schema's keyword and its parameters
 * (src/http/protocol/validation.ts); handlers name a key and its parameters (`message('SORT_KEY', {…})`).
 * Nothing of the validator's own wording (`must match pattern "\S"`) reaches a client. A part
 * declares the messages of its own rules (`messages` in its definition); the catalogue
 * (src/catalogue.ts) words them all.
 */
interface CoreMessageParams {
  REQUIRED: Record<never, never>
  BODY_REQUIRED: Record<never, never>
  UNKNOWN_MEMBER: Record<never, never>
  UNKNOWN_PARAMETER: Record<never, never>
  TYPE: { readonly types: readonly JsonType[] }
  DECIMAL_INTEGER: Record<never, never>
  BLANK: Record<never, never>
  MIN_LENGTH: { readonly limit: number }
  MAX_LENGTH: { readonly limit: number }
  MIN_ITEMS: { readonly limit: number }
  MAX_ITEMS: { readonly limit: number }
  DUPLICATE_ITEMS: Record<never, never>
  MINIMUM: { readonly limit: number }
  MAXIMUM: { readonly limit: number }
  ABOVE: { readonly limit: number }
  BELOW: { readonly limit: number }
  ONE_OF: { readonly allowed: readonly unknown[] }
  EQUAL: { readonly value: unknown }
  EMAIL: Record<never, never>
  DATE_TIME: Record<never, never>
  DATE: Record<never, never>
  URL: Record<never, never>
  UUID: Record<never, never>
  FORMAT: Record<never, never>
  INVALID: Record<never, never>
  NUL_CHARACTER: Record<never, never>
  SORT_DIRECTION: { readonly value: string }
  SORT_KEY: { readonly value: string, readonly allowed: readonly string[] }
  SORT_REPEATED: { readonly value: string }
  SYNONYMS_DIFFER: { readonly a: string, readonly b: string }
  PAGING_CONFLICT: { readonly a: string, readonly b: string }
  UNKNOWN_FIELD_NAME: { readonly value: string, readonly allowed: readonly string[] }
  NO_INCLUDES: Record<never, never>
  UNKNOWN_INCLUDE: { readonly value: string, readonly allowed: readonly string[] }
  ID_ASSIGNED: Record<never, never>
  ID_MISMATCH: { readonly sent: unknown, readonly path: unknown }
  SERVICE_SET: Record<never, never>
  URL_SCHEME: Record<never, never>
  URL_CREDENTIALS: Record<never, never>
  HOST_UNRESOLVED: { readonly host: string }
  ADDRESS_REFUSED: { readonly address: string, readonly kind: AddressKind }
}

/**
 * Every message's parameters: the core's, and those a resource adds by declaration merging
 * (`interface MessageParams { SLOT_TAKEN: Record<never, never> }`) with its templates.
 */
export interface MessageParams extends CoreMessageParams {}

export type MessageKey = keyof MessageParams
export type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null'
export type AddressKind = 'loopback' | 'private' | 'link-local' | 'reserved'

/** A message before it is worded: its key and parameters. */
export type Message = { [K in MessageKey]: { readonly key: K, readonly params: MessageParams[K] } }[MessageKey]

/** `message('MAX_LENGTH', { limit: 100 })`; parameterless keys take none. */
export function message<K extends MessageKey> (key: K, ...params: MessageParams[K] extends Record<never, never> ? [MessageParams[K]?] : [MessageParams[K]]): Message {
  return { key, params: params[0] ?? {} } as Message
}

type Templates<P = CoreMessageParams> = { readonly [K in keyof P]: (p: P[K]) => string }

interface Words {
  readonly types: Readonly<Record<JsonType, string>>
  readonly or: string
  readonly kinds: Readonly<Record<AddressKind, string>>
}

const show = (v: unknown): string => typeof v === 'string' ? v : JSON.stringify(v)
const list = (values: readonly unknown[]): string => values.map(show).join(', ')
const chars = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

const EN_WORDS: Words = {
  types: { string: 'a string', integer: 'an integer', number: 'a number', boolean: 'true or false', object: 'a JSON object', array: 'an array', null: 'null' },
  or: ' or ',
  kinds: { loopback: 'a loopback address', private: 'a private address', 'link-local': 'a link-local address', reserved: 'a reserved address' },
}
const DE_WORDS: Words = {
  types: { string: 'eine Zeichenkette', integer: 'eine ganze Zahl', number: 'eine Zahl', boolean: 'true oder false', object: 'ein JSON-Objekt', array: 'eine Liste', null: 'null' },
  or: ' oder ',
  kinds: { loopback: 'einer Loopback-Adresse', private: 'einer privaten Adresse', 'link-local': 'einer link-lokalen Adresse', reserved: 'einer reservierten Adresse' },
}
const FR_WORDS: Words = {
  types: { string: 'une chaîne', integer: 'un entier', number: 'un nombre', boolean: 'true ou false', object: 'un objet JSON', array: 'un tableau', null: 'null' },
  or: ' ou ',
  kinds: { loopback: 'une adresse de bouclage', private: 'une adresse privée', 'link-local': 'une adresse lien-local', reserved: 'une adresse réservée' },
}
const ES_WORDS: Words = {
  types: { string: 'una cadena', integer: 'un entero', number: 'un número', boolean: 'true o false', object: 'un objeto JSON', array: 'una lista', null: 'null' },
  or: ' o ',
  kinds: { loopback: 'una dirección de bucle local', private: 'una dirección privada', 'link-local': 'una dirección de enlace local', reserved: 'una dirección reservada' },
}

const types = (w: Words, t: readonly JsonType[]): string => t.map(x => w.types[x]).join(w.or)

const EN: Templates = {
  REQUIRED: () => 'is required',
  BODY_REQUIRED: () => 'A JSON request body is required',
  UNKNOWN_MEMBER: () => 'is not a member of this resource',
  UNKNOWN_PARAMETER: () => 'is not a query parameter of this endpoint',
  TYPE: p => `must be ${types(EN_WORDS, p.types)}`,
  DECIMAL_INTEGER: () => 'must be an integer written in decimal digits',
  BLANK: () => 'must not be blank',
  MIN_LENGTH: p => `must be at least ${chars(p.limit, 'character', 'characters')}`,
  MAX_LENGTH: p => `must be at most ${chars(p.limit, 'character', 'characters')}`,
  MIN_ITEMS: p => `must have at least ${chars(p.limit, 'entry', 'entries')}`,
  MAX_ITEMS: p => `must have at most ${chars(p.limit, 'entry', 'entries')}`,
  DUPLICATE_ITEMS: () => 'must not hold the same entry twice',
  MINIMUM: p => `must be at least ${p.limit}`,
  MAXIMUM: p => `must be at most ${p.limit}`,
  ABOVE: p => `must be greater than ${p.limit}`,
  BELOW: p => `must be less than ${p.limit}`,
  ONE_OF: p => `must be one of: ${list(p.allowed)}`,
  EQUAL: p => `must be ${show(p.value)}`,
  EMAIL: () => 'must be an e-mail address',
  DATE_TIME: () => 'must be an RFC 3339 date and time, such as 2026-01-31T09:30:00Z',
  DATE: () => 'must be a date, such as 2026-01-31',
  URL: () => 'must be an absolute URL',
  UUID: () => 'must be a UUID',
  FORMAT: () => 'is not in the required format',
  INVALID: () => 'is not valid',
  NUL_CHARACTER: () => 'must not contain the NUL character (U+0000)',
  SORT_DIRECTION: p => `"${p.value}" is not a sort direction; use asc or desc`,
  SORT_KEY: p => `"${p.value}" is not a sort key; use one of ${list(p.allowed)}`,
  SORT_REPEATED: p => `"${p.value}" appears twice`,
  SYNONYMS_DIFFER: p => `${p.a} and ${p.b} are synonyms; give one, or give both the same value`,
  PAGING_CONFLICT: p => `${p.a} and ${p.b} choose different kinds of paging; give one`,
  UNKNOWN_FIELD_NAME: p => `"${p.value}" is not a field; use any of ${list(p.allowed)}`,
  NO_INCLUDES: () => 'there are no related resources to include here',
  UNKNOWN_INCLUDE: p => `"${p.value}" cannot be included; use any of ${list(p.allowed)}`,
  ID_ASSIGNED: () => 'is assigned by the service; leave it out',
  ID_MISMATCH: p => `is ${show(p.sent)} in the body but ${show(p.path)} in the path`,
  SERVICE_SET: () => 'is set by the service; a patch cannot change it',
  URL_SCHEME: () => 'must use http or https',
  URL_CREDENTIALS: () => 'must not carry a user name or password',
  HOST_UNRESOLVED: p => `names the host "${p.host}", which does not resolve`,
  ADDRESS_REFUSED: p => `resolves to ${p.address}, ${EN_WORDS.kinds[p.kind]}; webhooks go only to public addresses`,
}

const DE: Templates = {
  REQUIRED: () => 'ist erforderlich',
  BODY_REQUIRED: () => 'Ein JSON-Anfragekörper ist erforderlich',
  UNKNOWN_MEMBER: () => 'ist kein Feld dieser Ressource',
  UNKNOWN_PARAMETER: () => 'ist kein Abfrageparameter dieses Endpunkts',
  TYPE: p => `muss ${types(DE_WORDS, p.types)} sein`,
  DECIMAL_INTEGER: () => 'muss eine ganze Zahl in Dezimalziffern sein',
  BLANK: () => 'darf nicht leer sein',
  MIN_LENGTH: p => `muss mindestens ${chars(p.limit, 'Zeichen', 'Zeichen')} lang sein`,
  MAX_LENGTH: p => `darf höchstens ${chars(p.limit, 'Zeichen', 'Zeichen')} lang sein`,
  MIN_ITEMS: p => `muss mindestens ${chars(p.limit, 'Eintrag', 'Einträge')} haben`,
  MAX_ITEMS: p => `darf höchstens ${chars(p.limit, 'Eintrag', 'Einträge')} haben`,
  DUPLICATE_ITEMS: () => 'darf keinen Eintrag zweimal enthalten',
  MINIMUM: p => `muss mindestens ${p.limit} sein`,
  MAXIMUM: p => `darf höchstens ${p.limit} sein`,
  ABOVE: p => `muss größer als ${p.limit} sein`,
  BELOW: p => `muss kleiner als ${p.limit} sein`,
  ONE_OF: p => `muss einer dieser Werte sein: ${list(p.allowed)}`,
  EQUAL: p => `muss ${show(p.value)} sein`,
  EMAIL: () => 'muss eine E-Mail-Adresse sein',
  DATE_TIME: () => 'muss Datum und Uhrzeit nach RFC 3339 sein, etwa 2026-01-31T09:30:00Z',
  DATE: () => 'muss ein Datum sein, etwa 2026-01-31',
  URL: () => 'muss eine absolute URL sein',
  UUID: () => 'muss eine UUID sein',
  FORMAT: () => 'hat nicht das verlangte Format',
  INVALID: () => 'ist ungültig',
  NUL_CHARACTER: () => 'darf das NUL-Zeichen (U+0000) nicht enthalten',
  SORT_DIRECTION: p => `„${p.value}“ ist keine Sortierrichtung; verwenden Sie asc oder desc`,
  SORT_KEY: p => `„${p.value}“ ist kein Sortierschlüssel; verwenden Sie einen von ${list(p.allowed)}`,
  SORT_REPEATED: p => `„${p.value}“ kommt zweimal vor`,
  SYNONYMS_DIFFER: p => `${p.a} und ${p.b} bedeuten dasselbe; geben Sie einen an oder beide mit demselben Wert`,
  PAGING_CONFLICT: p => `${p.a} und ${p.b} wählen verschiedene Arten des Blätterns; geben Sie nur einen an`,
  UNKNOWN_FIELD_NAME: p => `„${p.value}“ ist kein Feld; verwenden Sie beliebige von ${list(p.allowed)}`,
  NO_INCLUDES: () => 'hier gibt es keine verknüpften Ressourcen zum Einbetten',
  UNKNOWN_INCLUDE: p => `„${p.value}“ kann nicht eingebettet werden; verwenden Sie beliebige von ${list(p.allowed)}`,
  ID_ASSIGNED: () => 'wird vom Dienst vergeben; lassen Sie es weg',
  ID_MISMATCH: p => `ist im Körper ${show(p.sent)}, im Pfad aber ${show(p.path)}`,
  SERVICE_SET: () => 'wird vom Dienst gesetzt; ein Patch kann es nicht ändern',
  URL_SCHEME: () => 'muss http oder https verwenden',
  URL_CREDENTIALS: () => 'darf keinen Benutzernamen und kein Passwort enthalten',
  HOST_UNRESOLVED: p => `nennt den Host „${p.host}“, der sich nicht auflösen lässt`,
  ADDRESS_REFUSED: p => `wird zu ${p.address} aufgelöst, ${DE_WORDS.kinds[p.kind]}; Webhooks gehen nur an öffentliche Adressen`,
}

const FR: Templates = {
  REQUIRED: () => 'est obligatoire',
  BODY_REQUIRED: () => 'Un corps de requête JSON est obligatoire',
  UNKNOWN_MEMBER: () => 'n’est pas un membre de cette ressource',
  UNKNOWN_PARAMETER: () => 'n’est pas un paramètre de requête de ce point d’accès',
  TYPE: p => `doit être ${types(FR_WORDS, p.types)}`,
  DECIMAL_INTEGER: () => 'doit être un entier écrit en chiffres décimaux',
  BLANK: () => 'ne doit pas être vide',
  MIN_LENGTH: p => `doit compter au moins ${chars(p.limit, 'caractère', 'caractères')}`,
  MAX_LENGTH: p => `doit compter au plus ${chars(p.limit, 'caractère', 'caractères')}`,
  MIN_ITEMS: p => `doit avoir au moins ${chars(p.limit, 'entrée', 'entrées')}`,
  MAX_ITEMS: p => `doit avoir au plus ${chars(p.limit, 'entrée', 'entrées')}`,
  DUPLICATE_ITEMS: () => 'ne doit pas contenir deux fois la même entrée',
  MINIMUM: p => `doit valoir au moins ${p.limit}`,
  MAXIMUM: p => `doit valoir au plus ${p.limit}`,
  ABOVE: p => `doit être supérieur à ${p.limit}`,
  BELOW: p => `doit être inférieur à ${p.limit}`,
  ONE_OF: p => `doit être l’une de ces valeurs : ${list(p.allowed)}`,
  EQUAL: p => `doit valoir ${show(p.value)}`,
  EMAIL: () => 'doit être une adresse e-mail',
  DATE_TIME: () => 'doit être une date et heure RFC 3339, comme 2026-01-31T09:30:00Z',
  DATE: () => 'doit être une date, comme 2026-01-31',
  URL: () => 'doit être une URL absolue',
  UUID: () => 'doit être un UUID',
  FORMAT: () => 'n’a pas le format requis',
  INVALID: () => 'n’est pas valide',
  NUL_CHARACTER: () => 'ne doit pas contenir le caractère NUL (U+0000)',
  SORT_DIRECTION: p => `« ${p.value} » n’est pas un sens de tri ; utilisez asc ou desc`,
  SORT_KEY: p => `« ${p.value} » n’est pas une clé de tri ; utilisez l’une de ${list(p.allowed)}`,
  SORT_REPEATED: p => `« ${p.value} » apparaît deux fois`,
  SYNONYMS_DIFFER: p => `${p.a} et ${p.b} sont synonymes ; donnez-en un, ou les deux avec la même valeur`,
  PAGING_CONFLICT: p => `${p.a} et ${p.b} choisissent des paginations différentes ; n’en donnez qu’un`,
  UNKNOWN_FIELD_NAME: p => `« ${p.value} » n’est pas un champ ; utilisez parmi ${list(p.allowed)}`,
  NO_INCLUDES: () => 'il n’y a ici aucune ressource liée à inclure',
  UNKNOWN_INCLUDE: p => `« ${p.value} » ne peut pas être inclus ; utilisez parmi ${list(p.allowed)}`,
  ID_ASSIGNED: () => 'est attribué par le service ; omettez-le',
  ID_MISMATCH: p => `vaut ${show(p.sent)} dans le corps mais ${show(p.path)} dans le chemin`,
  SERVICE_SET: () => 'est fixé par le service ; un patch ne peut pas le modifier',
  URL_SCHEME: () => 'doit utiliser http ou https',
  URL_CREDENTIALS: () => 'ne doit contenir ni nom d’utilisateur ni mot de passe',
  HOST_UNRESOLVED: p => `nomme l’hôte « ${p.host} », qui ne se résout pas`,
  ADDRESS_REFUSED: p => `se résout en ${p.address}, ${FR_WORDS.kinds[p.kind]} ; les webhooks ne vont qu’à des adresses publiques`,
}

const ES: Templates = {
  REQUIRED: () => 'es obligatorio',
  BODY_REQUIRED: () => 'Se requiere un cuerpo de solicitud JSON',
  UNKNOWN_MEMBER: () => 'no es un miembro de este recurso',
  UNKNOWN_PARAMETER: () => 'no es un parámetro de consulta de este endpoint',
  TYPE: p => `debe ser ${types(ES_WORDS, p.types)}`,
  DECIMAL_INTEGER: () => 'debe ser un entero escrito en dígitos decimales',
  BLANK: () => 'no debe estar en blanco',
  MIN_LENGTH: p => `debe tener al menos ${chars(p.limit, 'carácter', 'caracteres')}`,
  MAX_LENGTH: p => `debe tener como máximo ${chars(p.limit, 'carácter', 'caracteres')}`,
  MIN_ITEMS: p => `debe tener al menos ${chars(p.limit, 'elemento', 'elementos')}`,
  MAX_ITEMS: p => `debe tener como máximo ${chars(p.limit, 'elemento', 'elementos')}`,
  DUPLICATE_ITEMS: () => 'no debe contener el mismo elemento dos veces',
  MINIMUM: p => `debe ser al menos ${p.limit}`,
  MAXIMUM: p => `debe ser como máximo ${p.limit}`,
  ABOVE: p => `debe ser mayor que ${p.limit}`,
  BELOW: p => `debe ser menor que ${p.limit}`,
  ONE_OF: p => `debe ser uno de: ${list(p.allowed)}`,
  EQUAL: p => `debe ser ${show(p.value)}`,
  EMAIL: () => 'debe ser una dirección de correo electrónico',
  DATE_TIME: () => 'debe ser una fecha y hora RFC 3339, como 2026-01-31T09:30:00Z',
  DATE: () => 'debe ser una fecha, como 2026-01-31',
  URL: () => 'debe ser una URL absoluta',
  UUID: () => 'debe ser un UUID',
  FORMAT: () => 'no tiene el formato requerido',
  INVALID: () => 'no es válido',
  NUL_CHARACTER: () => 'no debe contener el carácter NUL (U+0000)',
  SORT_DIRECTION: p => `«${p.value}» no es un sentido de orden; use asc o desc`,
  SORT_KEY: p => `«${p.value}» no es una clave de orden; use una de ${list(p.allowed)}`,
  SORT_REPEATED: p => `«${p.value}» aparece dos veces`,
  SYNONYMS_DIFFER: p => `${p.a} y ${p.b} son sinónimos; indique uno, o ambos con el mismo valor`,
  PAGING_CONFLICT: p => `${p.a} y ${p.b} eligen formas distintas de paginar; indique solo uno`,
  UNKNOWN_FIELD_NAME: p => `«${p.value}» no es un campo; use cualquiera de ${list(p.allowed)}`,
  NO_INCLUDES: () => 'aquí no hay recursos relacionados que incluir',
  UNKNOWN_INCLUDE: p => `«${p.value}» no se puede incluir; use cualquiera de ${list(p.allowed)}`,
  ID_ASSIGNED: () => 'lo asigna el servicio; omítalo',
  ID_MISMATCH: p => `es ${show(p.sent)} en el cuerpo pero ${show(p.path)} en la ruta`,
  SERVICE_SET: () => 'lo fija el servicio; un parche no puede cambiarlo',
  URL_SCHEME: () => 'debe usar http o https',
  URL_CREDENTIALS: () => 'no debe llevar nombre de usuario ni contraseña',
  HOST_UNRESOLVED: p => `nombra el host «${p.host}», que no se resuelve`,
  ADDRESS_REFUSED: p => `se resuelve a ${p.address}, ${ES_WORDS.kinds[p.kind]}; los webhooks solo van a direcciones públicas`,
}

/** Templates of messages, by language and key: the core's, or those a part declares (`messages`). */
export type MessageTemplates<K extends MessageKey = MessageKey> = Readonly<Record<ProblemLanguage, { readonly [k in K]: (p: MessageParams[k]) => string }>>

/** The core's messages in every language problems speak. */
export const CORE_MESSAGES: MessageTemplates<keyof CoreMessageParams> = { en: EN, de: DE, fr: FR, es: ES }

/**
 * The words of `m` in `lang`, when it is one of the core's messages (its key, otherwise): where no
 * catalogue is at hand. A problem's messages are worded by the catalogue, which has every part's.
 */
export function wordMessage (m: Message, lang: ProblemLanguage): string {
  const template = (CORE_MESSAGES[lang] as Partial<Record<MessageKey, (p: unknown) => string>>)[m.key]
  return template === undefined ? m.key : template(m.params)
}
