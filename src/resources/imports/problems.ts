import type { ProblemDeclaration } from '../../catalogue.ts'

declare module '../../errors.ts' { interface ResourceProblems { IMPORT_NOT_FOUND: true, IMPORT_UNREADABLE: true, IMPORT_TOO_LARGE: true } }

/** Its problem codes. */
export const importsProblems = {
  IMPORT_NOT_FOUND: {
    status: 404,
    title: 'Import not found',
    detail: 'No import with this id exists.',
    translations: {
      de: { title: 'Import nicht gefunden', detail: 'Es gibt keinen Import mit dieser ID.' },
      fr: { title: 'Import introuvable', detail: 'Aucun import ne porte cet identifiant.' },
      es: { title: 'Importación no encontrada', detail: 'No existe ninguna importación con este id.' },
    },
  },
  IMPORT_UNREADABLE: {
    status: 422,
    title: 'File cannot be imported',
    detail: 'The file is a kind this service reads, but its first bytes show it cannot be imported.',
    translations: {
      de: { title: 'Datei nicht importierbar', detail: 'Die Datei ist von einer lesbaren Art, aber ihre ersten Bytes zeigen, dass sie nicht importiert werden kann.' },
      fr: { title: 'Fichier non importable', detail: 'Le fichier est d’un type lisible, mais ses premiers octets montrent qu’il ne peut pas être importé.' },
      es: { title: 'Archivo no importable', detail: 'El archivo es de un tipo legible, pero sus primeros bytes muestran que no se puede importar.' },
    },
  },
  IMPORT_TOO_LARGE: {
    status: 413,
    title: 'File too large',
    detail: 'The file exceeds the size an import may have (IMPORT_MAX_BYTES).',
    translations: {
      de: { title: 'Datei zu groß', detail: 'Die Datei überschreitet die Größe, die ein Import haben darf (IMPORT_MAX_BYTES).' },
      fr: { title: 'Fichier trop volumineux', detail: 'Le fichier dépasse la taille qu’un import peut avoir (IMPORT_MAX_BYTES).' },
      es: { title: 'Archivo demasiado grande', detail: 'El archivo supera el tamaño que puede tener una importación (IMPORT_MAX_BYTES).' },
    },
  },
} satisfies Readonly<Record<string, ProblemDeclaration>>
