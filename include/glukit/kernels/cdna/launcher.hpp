// Placeholder until the CDNA kernels land: see kernels/cdna/.
#pragma once
