package bundle

import "k8s.io/apimachinery/pkg/util/intstr"

func intOrString(i int) intstr.IntOrString { return intstr.FromInt(i) }

func ptrTo[T any](v T) *T { return &v }
