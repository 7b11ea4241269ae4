/**
 * @peculiar/x509, the X.509 library certificates are issued and their extensions read with. Its
 * dependency injection (tsyringe) reads decorator metadata through the reflect-metadata polyfill,
 * which must be loaded first.
 */
import 'reflect-metadata';

export * as x509 from '@peculiar/x509';
