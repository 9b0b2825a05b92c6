// Command kstatus prints the verdict of Flux's health library (kstatus, from
// sigs.k8s.io/cli-utils) for each object read as JSON on standard input: one object or
// a list, as `kubectl get -o json` prints them. One line per object:
// name, status (Current, InProgress, Failed, Terminating...), message; tab-separated.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading standard input: %v", err)
	}
	var objects []unstructured.Unstructured
	if bytes.Contains(input, []byte(`"items"`)) {
		list := &unstructured.UnstructuredList{}
		if err := list.UnmarshalJSON(input); err != nil {
			fail("not a list of objects: %v", err)
		}
		objects = list.Items
	} else {
		object := unstructured.Unstructured{}
		if err := object.UnmarshalJSON(input); err != nil {
			fail("not an object: %v", err)
		}
		objects = append(objects, object)
	}
	for i := range objects {
		result, err := status.Compute(&objects[i])
		if err != nil {
			fail("%s: %v", objects[i].GetName(), err)
		}
		fmt.Printf("%s\t%s\t%s\n", objects[i].GetName(), result.Status, result.Message)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kstatus: "+format+"\n", args...)
	os.Exit(1)
}
