// sdspeed --dump-kernels: gemm_coopmat_f16a16
// glslc -D: SFP_F16=1 AFP_F16=1
// specialization constants: 0=128 1=16 2=16 3=16 4=2 5=2 6=2 7=2 8=32 9=1 10=1 11=32 20=1
// push constants: 24 bytes; storage buffers: 5
#version 450
#extension GL_GOOGLE_include_directive : enable
#line 1 "/work/main/kernels/gemm/gemm_coopmat.comp"








































#line 1 "/work/main/kernels/gemm/../common/coopmat.glsl"










#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require



#line 42 "/work/main/kernels/gemm/gemm_coopmat.comp"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#line 1 "/work/main/kernels/gemm/../common/prelude.glsl"











#extension GL_EXT_control_flow_attributes : require

#extension GL_EXT_shader_16bit_storage : require





#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require







const uint SD_NCHW = 0u;
const uint SD_NC4HW4 = 1u;






uint sd_index(uint layout_, uint n, uint c, uint hw, uint C, uint HW){
  const uint nchw =(n * C + c)* HW + hw;
  const uint S =(C + 3u)/ 4u;
  const uint nc4 =((n * S + c / 4u)* HW + hw)* 4u +(c & 3u);
  return layout_ == SD_NCHW ? nchw : nc4;
}












uint sd_stored_channels(uint layout_, uint C){ return layout_ == SD_NCHW ? C :(C + 3u)/ 4u * 4u;}
#line 44 "/work/main/kernels/gemm/gemm_coopmat.comp"
#line 1 "/work/main/kernels/gemm/../common/act.glsl"






float erfc_nr(float z){
  const float t = 1.0 /(1.0 + 0.5 * abs(z));
  const float r = t * exp(- z * z - 1.26551223 + t *(1.00002368 + t *(0.37409196 + t *(0.09678418 +
                  t *(- 0.18628806 + t *(0.27886807 + t *(- 1.13520398 + t *(1.48851587 +
                  t *(- 0.82215223 + t * 0.17087277)))))))));
  return z >= 0.0 ? r : 2.0 - r;
}

  float16_t gelu(float16_t v){ return float16_t(0.5)* v * float16_t(erfc_nr(- float(v)* 0.70710678118654752));}



  float16_t sigmoid_times(float16_t v, float16_t a){ return v /(float16_t(1.0)+ exp(- a * v));}

  float16_t apply(float16_t v, uint fn){
  if(fn == 0u)return gelu(v);
  if(fn == 1u){


    const float16_t u = float16_t(0.79788456080286536)*(v + float16_t(0.044715)* v * v * v);
    return float16_t(0.5)* v *(float16_t(2.0)- float16_t(2.0)/(exp(float16_t(2.0)* u)+ float16_t(1.0)));
  }
  if(fn == 2u)return sigmoid_times(v, float16_t(1.702));
  return sigmoid_times(v, float16_t(1.0));
}

#line 45 "/work/main/kernels/gemm/gemm_coopmat.comp"
#line 1 "/work/main/kernels/gemm/../common/weights.glsl"





















layout(constant_id = 20)const uint SD_WFMT = 0;
const uint SD_PFMT = SD_WFMT == 0u ? 0u : 1u;


























#line 46 "/work/main/kernels/gemm/gemm_coopmat.comp"

layout(local_size_x_id = 0)in;
layout(constant_id = 1)const uint CM = 16;
layout(constant_id = 2)const uint CN = 16;
layout(constant_id = 3)const uint CK = 16;
layout(constant_id = 4)const uint WM = 2;
layout(constant_id = 5)const uint WN = 2;
layout(constant_id = 6)const uint SGM = 2;
layout(constant_id = 7)const uint SGN = 2;
layout(constant_id = 8)const uint KS = 32;
layout(constant_id = 9)const uint DB = 1;
layout(constant_id = 10)const uint PAIRS = 1;
layout(constant_id = 11)const uint SGSIZE = 32;

const uint BM = SGM * WM * CM, BN = SGN * WN * CN, WGS = SGM * SGN * SGSIZE;
const uint ASTR = BM + 8u, BSTR = KS + 8u;
const uint AT = KS * ASTR, BT = PAIRS * BN * BSTR;
const uint AE = KS * BM, BE = PAIRS * BN * KS;
const uint AL =(AE + WGS - 1u)/ WGS, BL =(BE + WGS - 1u)/ WGS;
const uint STAGES = DB == 1u ? 2u : 1u;
const uint CT = CM * CN;
const uint CE = CT / 32u;

layout(std430, binding = 0)readonly buffer X { float16_t x[];};
                        layout(std430, binding = 1)readonly buffer W { uint w[];};float w_half(uint byteOff){ const uint word = w[byteOff >> 2u];return unpackHalf2x16((byteOff & 2u)!= 0u ? word >> 16u : word). x;} uint w_byte(uint byteOff){ return(w[byteOff >> 2u]>>((byteOff & 3u)* 8u))& 255u;} float w_p(uint i){ return SD_PFMT == 0u ? uintBitsToFloat(w[i]): w_half(i * 2u);} float w_w(uint row, uint k, uint K){ if(SD_WFMT == 0u)return uintBitsToFloat(w[row * K + k]);if(SD_WFMT == 1u)return w_half((row * K + k)* 2u);const uint j = k & 31u, blk = row *((K + 31u)/ 32u)+ k / 32u;if(SD_WFMT == 2u){ const uint o = blk * 34u;return w_half(o)* float(bitfieldExtract(int(w_byte(o + 2u + j)), 0, 8));} const uint o = blk * 18u, byte_ = w_byte(o + 2u +(j & 15u));return w_half(o)* float(int(j < 16u ?(byte_ & 15u):(byte_ >> 4u))- 8);}
                               layout(std430, binding = 2)readonly buffer Bias { uint wbias[];};float wbias_half(uint byteOff){ const uint word = wbias[byteOff >> 2u];return unpackHalf2x16((byteOff & 2u)!= 0u ? word >> 16u : word). x;} uint wbias_byte(uint byteOff){ return(wbias[byteOff >> 2u]>>((byteOff & 3u)* 8u))& 255u;} float wbias_p(uint i){ return SD_PFMT == 0u ? uintBitsToFloat(wbias[i]): wbias_half(i * 2u);} float wbias_w(uint row, uint k, uint K){ if(SD_WFMT == 0u)return uintBitsToFloat(wbias[row * K + k]);if(SD_WFMT == 1u)return wbias_half((row * K + k)* 2u);const uint j = k & 31u, blk = row *((K + 31u)/ 32u)+ k / 32u;if(SD_WFMT == 2u){ const uint o = blk * 34u;return wbias_half(o)* float(bitfieldExtract(int(wbias_byte(o + 2u + j)), 0, 8));} const uint o = blk * 18u, byte_ = wbias_byte(o + 2u +(j & 15u));return wbias_half(o)* float(int(j < 16u ?(byte_ & 15u):(byte_ >> 4u))- 8);}
layout(std430, binding = 3)readonly buffer R { float16_t res[];};
layout(std430, binding = 4)writeonly buffer Y { float16_t y[];};
layout(push_constant)uniform Push {
  uint K, F, HW, epi, flags, layout_;
} p;

shared float16_t As[STAGES * AT];
shared float16_t Bs[STAGES * BT];
shared float Cs[SGM * SGN * PAIRS * CT];

float16_t ar[AL];
float16_t br[BL];



void loadGlobal(uint b, uint m0, uint n0, uint k0){
  const uint lid = gl_LocalInvocationID . x;
  [[unroll]]for(uint i = 0u;i < AL;++ i){

    const uint e = lid + i * WGS, kk = e / BM, mm = e % BM, k = k0 + kk, t = m0 + mm;
    const bool ok = all(bvec3(e < AE, k < p . K, t < p . HW));
    const float v = float(x[sd_index(p . layout_, b,((ok)?(k): 0u),((ok)?(t): 0u), p . K, p . HW)]);
    ar[i]= float16_t(ok ? v : 0.0);
  }
  [[unroll]]for(uint i = 0u;i < BL;++ i){

    const uint e = lid + i * WGS, kk = e % KS, nn = e / KS, k = k0 + kk;
    const uint pair = nn / BN, o = n0 + nn % BN;
    const bool ok = all(bvec3(e < BE, k < p . K, o < p . F));
    const float v = w_w(((ok)?(pair * p . F + o): 0u),((ok)?(k): 0u), p . K);
    br[i]= float16_t(ok ? v : 0.0);
  }
}

void storeShared(uint stage){
  const uint lid = gl_LocalInvocationID . x;
  [[unroll]]for(uint i = 0u;i < AL;++ i){
    const uint e = lid + i * WGS;
    if(e < AE)As[stage * AT +(e / BM)* ASTR + e % BM]= ar[i];
  }
  [[unroll]]for(uint i = 0u;i < BL;++ i){
    const uint e = lid + i * WGS;
    if(e < BE)Bs[stage * BT +(e / KS)* BSTR + e % KS]= br[i];
  }
}

void main(){
  const uint sg = gl_SubgroupID, sgm = sg % SGM, sgn = sg / SGM;
  const uint m0 = gl_WorkGroupID . x * BM, n0 = gl_WorkGroupID . y * BN, b = gl_WorkGroupID . z;







  fcoopmatNV < 32, gl_ScopeSubgroup, CM, CN > acc[PAIRS * WM * WN];
  [[unroll]]for(uint a = 0u;a < PAIRS * WM * WN;++ a)acc[a]= fcoopmatNV < 32, gl_ScopeSubgroup, CM, CN >(0.0);


  const uint steps =(p . K + KS - 1u)/ KS;
  if(DB == 1u){
    loadGlobal(b, m0, n0, 0u);
    storeShared(0u);
    barrier();
  }
  for(uint s = 0u;s < steps;++ s){
    uint stage = 0u;
    if(DB == 1u){
      stage = s & 1u;
      if(s + 1u < steps)loadGlobal(b, m0, n0,(s + 1u)* KS);
    } else {
      loadGlobal(b, m0, n0, s * KS);
      barrier();
      storeShared(0u);
      barrier();
    }
    [[unroll]]for(uint kk = 0u;kk < KS;kk += CK){




















      fcoopmatNV < 16, gl_ScopeSubgroup, CM, CK > am[WM];
      [[unroll]]for(uint i = 0u;i < WM;++ i)
        coopMatLoadNV(am[i], As, stage * AT + kk * ASTR +(sgm * WM + i)* CM, ASTR, true);
      [[unroll]]for(uint q = 0u;q < PAIRS;++ q)
        [[unroll]]for(uint j = 0u;j < WN;++ j){
          fcoopmatNV < 16, gl_ScopeSubgroup, CK, CN > bm;
          coopMatLoadNV(bm, Bs, stage * BT +(q * BN +(sgn * WN + j)* CN)* BSTR + kk, BSTR, true);
          [[unroll]]for(uint i = 0u;i < WM;++ i){
            const uint a =(q * WM + i)* WN + j;
            acc[a]= coopMatMulAddNV(am[i], bm, acc[a]);
          }
        }

    }
    if(DB == 1u){


      if(s + 1u < steps)storeShared(stage ^ 1u);
      barrier();
    }
  }

  const bool hasBias =(p . flags & 1u)!= 0u, hasRes =(p . flags & 2u)!= 0u;
  const uint stored = sd_stored_channels(p . layout_, p . F);
  const uint lane = gl_SubgroupInvocationID, scratch = sg * PAIRS * CT;
  [[unroll]]for(uint i = 0u;i < WM;++ i)
    [[unroll]]for(uint j = 0u;j < WN;++ j){
      [[unroll]]for(uint q = 0u;q < PAIRS;++ q){



        coopMatStoreNV(acc[(q * WM + i)* WN + j], Cs, scratch + q * CT, CM, true);

      }
      barrier();
      const uint t0 = m0 +(sgm * WM + i)* CM, o0 = n0 +(sgn * WN + j)* CN;
      for(uint e = lane;e < CT;e += SGSIZE){
        const uint t = t0 + e % CM, o = o0 + e / CM;
        if(t >= p . HW || o >= stored)continue;
        float out_ = 0.0;
        if(o < p . F){
          const float h = Cs[scratch + e]+(hasBias ? wbias_p(o): 0.0);
          if(PAIRS == 2u){
            const float g = Cs[scratch + CT + e]+(hasBias ? wbias_p(p . F + o): 0.0);
            out_ = h * float(gelu(float16_t(g)));
          } else {
            out_ = p . epi == 0u ? h : float(apply(float16_t(h), p . epi - 1u));
          }
          if(hasRes)out_ += float(res[sd_index(p . layout_, b, o, t, p . F, p . HW)]);
        }
        y[sd_index(p . layout_, b, o, t, p . F, p . HW)]= float16_t(out_);
      }
      barrier();
    }
}
