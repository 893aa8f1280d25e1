/* The navette program's libraries loaded on first use (lazy_libs.c). */
#ifndef NAVETTE_CLI_LAZY_LIBS_H
#define NAVETTE_CLI_LAZY_LIBS_H

/* Loads every library the program loads on first use now, exiting 127
 * with the dynamic loader's reason when one cannot be loaded. Nothing
 * when the program is linked as usual (NAVETTE_LAZY_LIBS off). */
void nv_lazy_load_all(void);

#endif
