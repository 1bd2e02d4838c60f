import { it } from 'vitest';
it.todo('race');
