/* The navette program's libraries loaded on first use (lazy_libs.c). */
#ifndef NAVETTE_CLI_LAZY_LIBS_H
#define NAVETTE_CLI_LAZY_LIBS_H

/* Loads every library the program loads on first use now, exiting 127
 * with the dynamic loader's reason when one cannot be loaded. Nothing
 * when the program is linked as usual (NAVETTE_LAZY_LIBS off). */
void nv_lazy_load_all(void);

#ifdef NAVETTE_LAZY_LIBS
/* 1 when symbol is reached through a stub whose library is not loaded yet
 * (the hook of core/versions.h). */
int nv_lazy_pending(const char *symbol);
#endif

#endif
