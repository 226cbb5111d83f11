/* Reassociation for every function after this header, asked at its file scope. */
#if defined(__clang__)
#pragma clang fp reassociate(on)
#else
#pragma GCC optimize("Ofast")
#endif
